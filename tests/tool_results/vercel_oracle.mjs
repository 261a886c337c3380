// What @ai-sdk/openai sends for generated tool outputs: the oracle of `sent_output`.
//
// Usage (in a folder with `ai` and `@ai-sdk/openai` installed):
//   node vercel_oracle.mjs OUT.json [N] [SEED]
// Draws N tool outputs ({type, value}: text, json, error-text, error-json,
// content, execution-denied; values of every JSON type, numbers of every
// magnitude, texts with control and non-ASCII characters), seeded, and writes
// each beside the tool result the provider's Chat Completions and Responses
// models put in their request body (a `fetch` that keeps the body and answers).
import { writeFileSync } from 'node:fs';
import { createOpenAI } from '@ai-sdk/openai';

const [out, n = '200', seed = '35'] = process.argv.slice(2);
let state = Number(seed);
const rand = () => {
  state = (state * 1103515245 + 12345) % 2147483648;
  return state / 2147483648;
};
const pick = (xs) => xs[Math.floor(rand() * xs.length)];
const TEXTS = ['', ' ', 'a', 'two\nlines', 'tab\t"q"\\', 'é€×🙂', '\u0000\u001f\u007f', '\u2028', '{"k": 1}'];
const NUMBERS = [0, -0, 1, -7, 2.5, 0.1, 1e-7, 1.5e-6, 0.000001, 123456789012, 1e21, 1.7976931348623157e308, 5e-324, 2 ** 53 + 2, -1e-10];

function json(depth = 0) {
  const kind = Math.floor(rand() * (depth < 2 ? 7 : 5));
  if (kind === 0) return null;
  if (kind === 1) return rand() < 0.5;
  if (kind === 2) return pick(NUMBERS);
  if (kind === 3) return pick(TEXTS);
  if (kind === 4) return pick(['ü', 'z', '10', '2']);
  if (kind === 5) return Array.from({ length: Math.floor(rand() * 4) }, () => json(depth + 1));
  const o = {};
  for (const k of ['z', 'a', 'é', '10', '2'].filter(() => rand() < 0.5)) o[k] = json(depth + 1);
  return o;
}

function output() {
  const kind = pick(['text', 'json', 'error-text', 'error-json', 'content', 'execution-denied']);
  if (kind === 'text' || kind === 'error-text') return { type: kind, value: pick(TEXTS) };
  if (kind === 'content') {
    return { type: kind, value: Array.from({ length: 1 + Math.floor(rand() * 3) }, () => ({ type: 'text', text: pick(TEXTS) })) };
  }
  if (kind === 'execution-denied') return rand() < 0.5 ? { type: kind } : { type: kind, reason: pick(TEXTS) };
  return { type: kind, value: json() };
}

let body;
const answers = {
  chat: { id: 'chatcmpl-o', object: 'chat.completion', created: 0, model: 'm', choices: [{ index: 0, message: { role: 'assistant', content: 'ok' }, finish_reason: 'stop' }], usage: { prompt_tokens: 1, completion_tokens: 1, total_tokens: 2 } },
  responses: { id: 'resp_o', object: 'response', created_at: 0, status: 'completed', model: 'm', output: [{ type: 'message', id: 'msg_o', role: 'assistant', status: 'completed', content: [{ type: 'output_text', text: 'ok', annotations: [] }] }], usage: { input_tokens: 1, output_tokens: 1, total_tokens: 2 } },
};
const fetch = async (url, init) => {
  body = JSON.parse(init.body);
  const answer = String(url).endsWith('/responses') ? answers.responses : answers.chat;
  return new Response(JSON.stringify(answer), { status: 200, headers: { 'content-type': 'application/json' } });
};
const openai = createOpenAI({ baseURL: 'http://oracle.invalid/v1', apiKey: 'sk-oracle', fetch });

async function sent(model, out) {
  const prompt = [
    { role: 'user', content: [{ type: 'text', text: 'hi' }] },
    { role: 'assistant', content: [{ type: 'tool-call', toolCallId: 'c1', toolName: 't', input: {} }] },
    { role: 'tool', content: [{ type: 'tool-result', toolCallId: 'c1', toolName: 't', output: out }] },
  ];
  await model.doGenerate({ prompt });
  const items = body.messages ?? body.input;
  const result = items.find((m) => m.role === 'tool' || m.type === 'function_call_output');
  return result.content ?? result.output;
}

const cases = [];
for (let i = 0; i < Number(n); i++) {
  const o = output();
  // The output as the trace holds it: JSON text written by the SDK, read back.
  const recorded = JSON.parse(JSON.stringify(o));
  cases.push({
    output: recorded,
    chat: await sent(openai.chat('gpt-4o-mini'), o),
    responses: await sent(openai.responses('gpt-4o-mini'), o),
  });
}
writeFileSync(out, JSON.stringify(cases, null, 0));
