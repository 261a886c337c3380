// A LangChain.js agent traced by OpenInference's LangChain.js instrumentation, over OTLP/HTTP (JSON).
//
// The agent as LangChain's documentation shows it: `createAgent` from `langchain`
// with `ChatOpenAI` pointed at the model server (Chat Completions, or the
// Responses API with `--api responses`; for the streamed modes `agent.stream`
// with the "messages" mode, which streams the model's answers: a streaming
// model's `invoke` would fetch a tokenizer from the network to estimate its
// usage), the three tools as `tool()`s with JSON Schema
// inputs; a tool's exception is caught by a `wrapToolCall` middleware and
// sent back to the model as the tool's error message.  Tracing as
// OpenInference documents it: a tracer provider with the OpenTelemetry JS
// OTLP/HTTP exporter (its JSON encoding, the endpoint from
// OTEL_EXPORTER_OTLP_ENDPOINT), `LangChainInstrumentation` with that provider,
// `manuallyInstrument(CallbackManagerModule)`; `--no-content` hides inputs and
// outputs (its `traceConfig`).
// Usage: node agent.mjs --base-url URL [--runs N] [--mode sync|stream]
//        [--api chat|responses] [--concurrent] [--no-content]
import { readFileSync } from 'node:fs';
import { parseArgs } from 'node:util';
import { LangChainInstrumentation } from '@arizeai/openinference-instrumentation-langchain';
import * as CallbackManagerModule from '@langchain/core/callbacks/manager';
import { ToolMessage } from '@langchain/core/messages';
import { ChatOpenAI } from '@langchain/openai';
import { OTLPTraceExporter } from '@opentelemetry/exporter-trace-otlp-http';
import { BatchSpanProcessor, TracerProvider } from '@opentelemetry/sdk-trace';
import { createAgent, createMiddleware, tool } from 'langchain';

const { values: args } = parseArgs({
  options: {
    'base-url': { type: 'string' },
    runs: { type: 'string', default: '1' },
    mode: { type: 'string', default: 'sync' },
    api: { type: 'string', default: 'chat' },
    concurrent: { type: 'boolean', default: false },
    'no-content': { type: 'boolean', default: false },
  },
});
const S = JSON.parse(readFileSync(new URL('./scenario.json', import.meta.url), 'utf8'));

const provider = new TracerProvider({
  spanProcessors: [new BatchSpanProcessor({ exporter: new OTLPTraceExporter() })],
});
const instrumentation = new LangChainInstrumentation({
  tracerProvider: provider,
  traceConfig: args['no-content'] ? { hideInputs: true, hideOutputs: true } : {},
});
instrumentation.manuallyInstrument(CallbackManagerModule);

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
  return JSON.stringify(S.results[name][input.order_id]);
}

const tools = Object.entries(S.tools).map(([name, t]) =>
  tool(async (input) => run(name, input), {
    name,
    description: t.description,
    schema: t.parameters,
  }),
);

// A tool's exception, as the tool's answer to the model (LangChain's documented middleware).
const toolErrors = createMiddleware({
  name: 'ToolErrors',
  wrapToolCall: async (request, handler) => {
    try {
      return await handler(request);
    } catch (error) {
      return new ToolMessage({
        content: `Error: ${error.message}`,
        tool_call_id: request.toolCall.id,
        status: 'error',
      });
    }
  },
});

const model = new ChatOpenAI({
  model: 'gpt-4o-mini',
  apiKey: 'sk-conformance-dummy',
  configuration: { baseURL: args['base-url'] },
  temperature: 0,
  useResponsesApi: args.api === 'responses',
});
const agent = createAgent({ model, tools, systemPrompt: S.system_prompt, middleware: [toolErrors] });

function text(message) {
  const c = message.content;
  return (typeof c === 'string' ? c : c.map((b) => b.text ?? '').join('')).trim();
}

async function ask(question) {
  const input = { messages: [{ role: 'user', content: question }] };
  if (args.mode === 'stream') {
    // The model's tokens as they come ("messages"), and the agent's state after each step.
    let last;
    const stream = await agent.stream(input, { streamMode: ['messages', 'values'] });
    for await (const [mode, data] of stream) if (mode === 'values') last = data;
    return text(last.messages.at(-1));
  }
  const result = await agent.invoke(input);
  return text(result.messages.at(-1));
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
