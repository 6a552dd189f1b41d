// The browser's JSON reader (app/src/codec.rs `read_json`): the engine's own JSON.parse, so the
// wasm carries no JSON parser of its own (BENCHMARKS.md, 10.7 KB gzip).
//
// One care: a JS number holds integers exactly only up to 2^53 - 1, and a card must show the
// exact call it pins (DESIGN §2: approving runs exactly that call). So an integer written beyond
// that range is read from its own digits into a BigInt (JSON.parse's source text, which Chromium
// has had since version 114); serde_wasm_bindgen reads a BigInt as an i64 or u64. A browser
// without the source text refuses such a text (fail closed) rather than show a rounded number.

/** Parses `text` as JSON; throws an Error whose message says what is wrong. */
export function parseJson(text) {
  return JSON.parse(text, exactIntegers);
}

/**
 * JSON.parse's reviver: every value as parsed, except an integer beyond 2^53 - 1, which becomes
 * the BigInt its digits say. Exported for the end-to-end tests.
 */
export function exactIntegers(key, value, context) {
  if (typeof value !== 'number' || Number.isSafeInteger(value) || !Number.isInteger(value)) {
    return value;
  }
  const source = context && typeof context.source === 'string' ? context.source : null;
  if (source === null) {
    throw new Error(
      'this browser cannot read a number this large exactly; open IRIS in a current browser',
    );
  }
  // `1e20` or `9007199254740993.0` is a floating point number on the server too: keep it.
  return /^-?[0-9]+$/.test(source) ? BigInt(source) : value;
}
