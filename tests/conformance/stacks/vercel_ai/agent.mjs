// A Vercel AI SDK agent with the SDK's OpenTelemetry integration, exported over OTLP/HTTP (JSON).
//
// Set up as the AI SDK's telemetry guide shows it: a tracer provider with the
// OpenTelemetry JS OTLP/HTTP exporter (its JSON encoding, the endpoint from
// OTEL_EXPORTER_OTLP_ENDPOINT), and `registerTelemetry(new OpenTelemetry(...))`
// from `@ai-sdk/otel` with that provider's tracer (`--telemetry legacy`:
// `LegacyOpenTelemetry`, the `ai.*` spans of earlier releases; `--no-content`:
// `recordInputs`/`recordOutputs` off).  The agent: `generateText` (`streamText`
// when streamed) with `@ai-sdk/openai` pointed at the model server (Chat
// Completions, or Responses with `--api responses`), the three tools as
// `tool()`s with JSON Schema inputs (a tool's exception goes back to the model
// as an error result) and `stopWhen: stepCountIs(5)`.
// Usage: node agent.mjs --base-url URL [--runs N] [--mode sync|stream]
//        [--api chat|responses] [--concurrent] [--telemetry current|legacy] [--no-content]
import { readFileSync } from 'node:fs';
import { parseArgs } from 'node:util';
import { createOpenAI } from '@ai-sdk/openai';
import { LegacyOpenTelemetry, OpenTelemetry } from '@ai-sdk/otel';
import { OTLPTraceExporter } from '@opentelemetry/exporter-trace-otlp-http';
import { BatchSpanProcessor, TracerProvider } from '@opentelemetry/sdk-trace';
import { generateText, jsonSchema, registerTelemetry, stepCountIs, streamText, tool } from 'ai';

const { values: args } = parseArgs({
  options: {
    'base-url': { type: 'string' },
    runs: { type: 'string', default: '1' },
    mode: { type: 'string', default: 'sync' },
    api: { type: 'string', default: 'chat' },
    concurrent: { type: 'boolean', default: false },
    telemetry: { type: 'string', default: 'current' },
    'no-content': { type: 'boolean', default: false },
  },
});
const S = JSON.parse(readFileSync(new URL('./scenario.json', import.meta.url), 'utf8'));

const provider = new TracerProvider({
  spanProcessors: [new BatchSpanProcessor({ exporter: new OTLPTraceExporter() })],
});
// The integrations' own default tracer names ("gen_ai", and "ai" for the legacy one), taken
// from this provider as the guide's "Custom Tracer" shows (it is not made the global one).
registerTelemetry(
  args.telemetry === 'legacy'
    ? new LegacyOpenTelemetry({ tracer: provider.getTracer('ai') })
    : new OpenTelemetry({ tracer: provider.getTracer('gen_ai') }),
);

const openai = createOpenAI({ baseURL: args['base-url'], apiKey: 'sk-conformance-dummy' });
const model = args.api === 'responses' ? openai.responses('gpt-4o-mini') : openai.chat('gpt-4o-mini');

// Each tool's calls so far per order: a retried tool raises at its first attempt only.
const attempts = {};

function run(name, input) {
  const key = `${name} ${input.order_id}`;
  const attempt = (attempts[key] = (attempts[key] ?? -1) + 1);
  if (name === S.raising_tool && (attempt === 0 || !S.retried)) {
    // A tool that timed out throws what the platform's own timeouts throw (AbortSignal.timeout).
    throw S.raises === 'TimeoutError'
      ? new DOMException(S.tracking_error, 'TimeoutError')
      : new Error(S.tracking_error);
  }
  return S.results[name][input.order_id];
}

const tools = Object.fromEntries(
  Object.entries(S.tools).map(([name, t]) => [
    name,
    tool({
      description: t.description,
      inputSchema: jsonSchema(t.parameters),
      execute: async (input) => run(name, input),
    }),
  ]),
);

async function ask(question) {
  const options = {
    model,
    system: S.system_prompt,
    prompt: question,
    tools,
    temperature: 0,
    maxOutputTokens: 1024,
    stopWhen: stepCountIs(5),
    telemetry: args['no-content'] ? { recordInputs: false, recordOutputs: false } : {},
  };
  if (args.mode === 'stream') {
    const result = streamText(options);
    return (await result.text).trim();
  }
  return (await generateText(options)).text.trim();
}

// A run that ends in an error is said as such (the harness's "raised: <class>" line), and
// the other runs and the export go on.
async function answered(question) {
  try {
    return await ask(question);
  } catch (error) {
    console.error(error);
    return `raised: ${error?.constructor?.name ?? typeof error}`;
  }
}

const questions = S.questions.slice(0, Number(args.runs));
let answers;
if (args.concurrent) {
  answers = await Promise.all(questions.map(answered));
} else {
  answers = [];
  for (const q of questions) answers.push(await answered(q));
}
for (const a of answers) console.log(a);
await provider.shutdown();
