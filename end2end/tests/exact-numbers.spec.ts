// The page reads the server's JSON with the browser's own JSON.parse (app/src/json_client.js),
// and a card must show the exact call it pins: an integer beyond 2^53 - 1 (a 64-bit id, say)
// is read from its digits, never rounded to the nearest double; a browser that cannot do that
// refuses the text instead of showing another number.
import { test, expect } from '@playwright/test';
import { openLive, watchConsole } from './helpers';

test('big integers in the JSON the page reads stay exact; the reader refuses what it cannot read exactly', async ({
  page,
}) => {
  const problems = watchConsole(page);
  await openLive(page, '/activity');
  const reader = await page.evaluate(() =>
    performance
      .getEntriesByType('resource')
      .map((entry) => entry.name)
      .find((name) => name.endsWith('/json_client.js')),
  );
  expect(reader, 'the page loads its JSON reader').toBeTruthy();

  const read = await page.evaluate(async (url) => {
    const { parseJson, exactIntegers } = await import(url!);
    const value = parseJson(
      '{"id":12345678901234567890,"low":-9223372036854775808,"small":42,' +
        '"half":1.5,"exp":1e20,"float":9007199254740993.0,"list":[18446744073709551615],"s":"9007199254740993"}',
    );
    const kinds = Object.fromEntries(Object.entries(value).map(([k, v]) => [k, typeof v]));
    let noSource = '';
    try {
      exactIntegers('id', 2 ** 60, undefined);
    } catch (e) {
      noSource = (e as Error).message;
    }
    let notJson = '';
    try {
      parseJson('{"id": 1');
    } catch (e) {
      notJson = (e as Error).name;
    }
    return {
      id: String(value.id),
      low: String(value.low),
      list: String(value.list[0]),
      small: value.small,
      half: value.half,
      exp: value.exp,
      s: value.s,
      kinds,
      noSource,
      notJson,
      safe: exactIntegers('n', 7, undefined),
    };
  }, reader);

  expect(read.id).toBe('12345678901234567890');
  expect(read.low).toBe('-9223372036854775808');
  expect(read.list).toBe('18446744073709551615');
  expect(read.kinds).toEqual({
    id: 'bigint',
    low: 'bigint',
    small: 'number',
    half: 'number',
    exp: 'number',
    float: 'number',
    list: 'object',
    s: 'string',
  });
  expect(read.small).toBe(42);
  expect(read.half).toBe(1.5);
  expect(read.exp).toBe(1e20);
  expect(read.s).toBe('9007199254740993');
  expect(read.noSource).toContain('cannot read a number this large exactly');
  expect(read.notJson).toBe('SyntaxError');
  expect(read.safe).toBe(7);
  expect(problems).toEqual([]);
});
