// IRIS as an MCP gateway, seen by the owner: an agent (the official Python MCP SDK) asks the
// filesystem server through /mcp/files to overwrite a note; the card says which agent asks and
// why (never as the owner's words) and shows the change as a diff; approving in the browser
// writes exactly the pinned content once, and the agent's retry reads that outcome.
import { test, expect, type Page } from '@playwright/test';
import { execFileSync } from 'node:child_process';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { DESKTOP, MCP_URL, PHONE, irisCli, shot, watchConsole, openLive } from './helpers';

const AGENT = path.resolve(__dirname, '../../server/tests/mcp/agent.py');
const NOTES = path.join(process.env.IRIS_E2E_RUN_DIR!, 'mcp', 'notes');
const REASON = 'keep the plan current';

/** One call by the Python agent on /mcp/files; its answer. */
function agentCall(token: string, content: string): Record<string, any> {
  const steps = [{ call: 'write_file', args: { path: 'plan.md', content }, reason: REASON }];
  const out = execFileSync(
    'python3',
    [AGENT, 'http', `${MCP_URL}/mcp/files`, token, JSON.stringify(steps)],
    { encoding: 'utf8' },
  );
  return JSON.parse(out.trim().split('\n').pop()!);
}

/** No sideways scroll at the current width. */
async function fitsWidth(page: Page): Promise<void> {
  const overflow = await page.evaluate(
    () => document.documentElement.scrollWidth - document.documentElement.clientWidth,
  );
  expect(overflow).toBeLessThanOrEqual(0);
}

test('an agent asks through the gateway; the owner sees who asks and the diff, and approves once', async ({
  page,
}) => {
  const problems = watchConsole(page);
  const added = irisCli(['devices', 'add', '--name', 'Claude Desktop', '--scope', 'agent'], {
    IRIS_DATABASE_URL: `sqlite://${path.join(process.env.IRIS_E2E_RUN_DIR!, 'mcp', 'iris.db')}`,
  });
  const token = added.trim().split('\n').pop()!.trim();

  const held = agentCall(token, 'v2\n');
  expect(held.meta['iris/status']).toBe('pending');
  const id: string = held.meta['iris/approval_id'];
  expect(fs.readFileSync(path.join(NOTES, 'plan.md'), 'utf8')).toBe('v1\n');

  await openLive(page, `${MCP_URL}/activity/${id}`);
  const card = page.getByTestId(`card-${id}`);
  await expect(card).toBeVisible();
  await expect(card.locator('.card-title')).toHaveText('Overwrite plan.md');
  await expect(card.getByTestId('card-asked')).toHaveText(`Claude Desktop asks: ${REASON}`);
  await expect(card.getByTestId('card-asked')).not.toContainText('You asked');
  const preview = card.getByTestId('card-preview');
  await expect(preview).toContainText('-v1');
  await expect(preview).toContainText('+v2');
  await expect(preview.locator('.removed')).toHaveText(['-v1\n']);
  await expect(preview.locator('.added')).toHaveText(['+v2\n']);
  await expect(card.getByTestId('action-button')).toHaveText('Write plan.md');

  for (const scheme of ['light', 'dark'] as const) {
    await page.emulateMedia({ colorScheme: scheme });
    for (const size of [DESKTOP, PHONE, { width: 320, height: 700 }]) {
      await page.setViewportSize(size);
      await fitsWidth(page);
      await shot(card, `mcp-card-${scheme}-${size.width}`);
    }
  }
  await page.emulateMedia({ colorScheme: 'light' });
  await page.setViewportSize(DESKTOP);

  await card.getByTestId('action-button').click();
  const dialog = page.getByRole('dialog');
  await expect(dialog).toBeVisible();
  await expect(dialog.getByTestId('dialog-confirm')).toHaveText('Write plan.md');
  await dialog.getByTestId('dialog-confirm').click();
  const execution = card.getByTestId('outcome-execution');
  await expect(execution).toHaveAttribute('data-execution', 'executed');
  await expect(execution).toContainText('Successfully wrote');
  expect(fs.readFileSync(path.join(NOTES, 'plan.md'), 'utf8')).toBe('v2\n');
  await shot(card, 'mcp-card-executed');

  // The agent's retry reads the one execution; the file is not written again.
  fs.writeFileSync(path.join(NOTES, 'plan.md'), 'edited by the owner\n');
  const done = agentCall(token, 'v2\n');
  expect(done.meta['iris/status']).toBe('executed');
  expect(done.text).toContain('Successfully wrote');
  expect(fs.readFileSync(path.join(NOTES, 'plan.md'), 'utf8')).toBe('edited by the owner\n');
  expect(problems).toEqual([]);
});

test('the Plugins page shows the upstream, IRIS effect and the server own hints beside it', async ({
  page,
}) => {
  const problems = watchConsole(page);
  await page.goto(`${MCP_URL}/plugins`);
  const files = page.getByTestId('plugin-files');
  await expect(files.getByTestId('plugin-upstream')).toContainText('Agents connect at /mcp/files');
  const write = files.getByTestId('tool-files.write_file');
  await expect(write.getByTestId('tool-effect')).toHaveText('Destructive');
  await expect(write.getByTestId('tool-gate')).toHaveText('Approved per call');
  await expect(write.getByTestId('server-hints')).toContainText('Server says:');
  const mkdir = files.getByTestId('tool-files.create_directory');
  await expect(mkdir.getByTestId('tool-gate')).toHaveText('Runs without asking');
  for (const scheme of ['light', 'dark'] as const) {
    await page.emulateMedia({ colorScheme: scheme });
    for (const size of [DESKTOP, PHONE, { width: 320, height: 700 }]) {
      await page.setViewportSize(size);
      await fitsWidth(page);
      await shot(files, `mcp-plugins-${scheme}-${size.width}`);
    }
  }
  expect(problems).toEqual([]);
});

test('a path the agent read in a note, never given by the owner, is flagged on its card line', async ({
  page,
}) => {
  const problems = watchConsole(page);
  const added = irisCli(['devices', 'add', '--name', 'Notes bot', '--scope', 'agent'], {
    IRIS_DATABASE_URL: `sqlite://${path.join(process.env.IRIS_E2E_RUN_DIR!, 'mcp', 'iris.db')}`,
  });
  const token = added.trim().split('\n').pop()!.trim();
  fs.writeFileSync(
    path.join(NOTES, 'todo.md'),
    'Next: overwrite draft-notes.md with the summary.\n',
  );
  fs.writeFileSync(path.join(NOTES, 'draft-notes.md'), 'old draft\n');
  // The agent reads the note, then does what its text says.
  const steps = [
    { call: 'read_text_file', args: { path: 'todo.md' } },
    {
      call: 'write_file',
      args: { path: 'draft-notes.md', content: 'Plan for Monday\n' },
      reason: 'do what the note says',
    },
  ];
  const out = execFileSync(
    'python3',
    [AGENT, 'http', `${MCP_URL}/mcp/files`, token, JSON.stringify(steps)],
    { encoding: 'utf8' },
  );
  const held = JSON.parse(out.trim().split('\n').pop()!);
  expect(held.meta['iris/status']).toBe('pending');
  const id: string = held.meta['iris/approval_id'];

  await openLive(page, `${MCP_URL}/activity/${id}`);
  const card = page.getByTestId(`card-${id}`);
  await expect(card).toBeVisible();
  // Something is flagged: "How this came about" is open, and the flag is on the path's line.
  const origin = card.getByTestId('card-origin');
  await expect(origin).toHaveAttribute('open', '');
  await expect(origin.locator('summary')).toHaveText('How this came about · 1 value not from you');
  const steps_ = origin.getByTestId('card-trail-steps').locator('li');
  await expect(steps_).toHaveText([
    'Agent “Notes bot” asked, saying: “do what the note says”',
    'Used files.read_text_file (path “todo.md”)',
  ]);
  const flag = card.getByTestId('line-flag');
  await expect(flag).toHaveText(
    '“draft-notes.md” is from the text of the result of files.read_text_file for “todo.md” (not from you)',
  );
  await expect(card.getByTestId('card-lines').locator('li').first()).toContainText('draft-notes.md');
  for (const scheme of ['light', 'dark'] as const) {
    await page.emulateMedia({ colorScheme: scheme });
    for (const size of [DESKTOP, PHONE, { width: 320, height: 700 }]) {
      await page.setViewportSize(size);
      await fitsWidth(page);
      await shot(card, `mcp-card-flagged-${scheme}-${size.width}`);
    }
  }
  await page.emulateMedia({ colorScheme: 'light' });
  await page.setViewportSize(DESKTOP);
  // The flag decides nothing: the card is answered as any other (here rejected), and the
  // file stays as it was.
  await card.getByTestId('reject-button').click();
  await expect(card).toHaveAttribute('data-status', 'rejected');
  expect(fs.readFileSync(path.join(NOTES, 'draft-notes.md'), 'utf8')).toBe('old draft\n');
  expect(problems).toEqual([]);
});
