// A Vercel AI SDK agent whose tools return every shape of result, traced by @ai-sdk/otel.
//
// Usage: node vercel_ai_agent.mjs --base-url URL [--api chat|responses]
//        [--telemetry current|legacy] [--stream]   (OTEL_EXPORTER_OTLP_ENDPOINT: the receiver)
// Each tool returns one shape: text, a JSON object, a list, numbers, null, a
// boolean, empty text, content parts (`toModelOutput`), and one tool throws.
// `generateText` (`streamText` with --stream) with `@ai-sdk/openai` (Chat Completions or Responses); the
// SDK's OpenTelemetry integration (`LegacyOpenTelemetry`: the `ai.*` spans), or
// with `ai` before 7 (no `registerTelemetry`) its built-in telemetry
// (`experimental_telemetry`, the `ai.*` spans) on a `BasicTracerProvider` (with
// the async-hooks context manager, as NodeSDK registers it).
import { parseArgs } from 'node:util';
import { createOpenAI } from '@ai-sdk/openai';
import { OTLPTraceExporter } from '@opentelemetry/exporter-trace-otlp-http';
import * as ai from 'ai';

const { values: args } = parseArgs({
  options: {
    'base-url': { type: 'string' },
    api: { type: 'string', default: 'chat' },
    telemetry: { type: 'string', default: 'current' },
    stream: { type: 'boolean', default: false },
  },
});

let provider;
let telemetry;
if (ai.registerTelemetry) {
  const { BatchSpanProcessor, TracerProvider } = await import('@opentelemetry/sdk-trace');
  const otel = await import('@ai-sdk/otel');
  provider = new TracerProvider({
    spanProcessors: [new BatchSpanProcessor({ exporter: new OTLPTraceExporter() })],
  });
  ai.registerTelemetry(
    args.telemetry === 'legacy'
      ? new otel.LegacyOpenTelemetry({ tracer: provider.getTracer('ai') })
      : new otel.OpenTelemetry({ tracer: provider.getTracer('gen_ai') }),
  );
} else {
  const { BasicTracerProvider, BatchSpanProcessor } = await import('@opentelemetry/sdk-trace-base');
  const { AsyncLocalStorageContextManager } = await import('@opentelemetry/context-async-hooks');
  const { context } = await import('@opentelemetry/api');
  // What NodeSDK sets up: spans started inside another one are its children.
  context.setGlobalContextManager(new AsyncLocalStorageContextManager().enable());
  provider = new BasicTracerProvider({
    spanProcessors: [new BatchSpanProcessor(new OTLPTraceExporter())],
  });
  telemetry = { isEnabled: true, tracer: provider.getTracer('ai') };
}

const openai = createOpenAI({ baseURL: args['base-url'], apiKey: 'sk-shapes-dummy' });
const model = args.api === 'responses' ? openai.responses('gpt-4o-mini') : openai.chat('gpt-4o-mini');

const SHAPES = {
  text: 'Colis parti de Lyon — 3 × 2 €',
  object: { status: 'shipped', ville: 'Zürich', items: [1, 2], note: null },
  list: [1, 'deux', { drei: 3.5 }, null, true],
  integer: 42,
  float: 2.5,
  null: null,
  boolean: false,
  empty_text: '',
};

const empty = ai.jsonSchema({ type: 'object', properties: {}, additionalProperties: false });
const tools = Object.fromEntries(
  Object.entries(SHAPES).map(([name, value]) => [
    `get_${name}`,
    ai.tool({ description: `Returns ${name}.`, inputSchema: empty, execute: async () => value }),
  ]),
);
tools.get_content = ai.tool({
  description: 'Returns content parts.',
  inputSchema: empty,
  execute: async () => ({ rows: 2 }),
  toModelOutput: ({ output }) => ({
    type: 'content',
    value: [
      { type: 'text', text: 'first part' },
      { type: 'text', text: `rows: ${output.rows}` },
    ],
  }),
});
tools.get_raising = ai.tool({
  description: 'Always throws.',
  inputSchema: empty,
  execute: async () => {
    throw new Error('carrier unreachable: délai dépassé');
  },
});

const options = {
  model,
  system: 'Call the tools.',
  prompt: 'Call every tool.',
  tools,
  temperature: 0,
  stopWhen: ai.stepCountIs(3),
  ...(telemetry && { experimental_telemetry: telemetry }),
};
const text = args.stream
  ? await ai.streamText(options).text
  : (await ai.generateText(options)).text;
console.log(text.trim());
await provider.shutdown();
