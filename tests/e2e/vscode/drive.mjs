// Drives the real VS Code (code-server 4.139.1 in headless Chromium) through named steps.
//
// Run by tests/e2e/test_vscode.py: one JSON request per line on stdin,
//     {"id": 1, "step": "open", "args": {...}}
// one JSON answer per line on stdout,
//     {"id": 1, "ok": true, "result": {...}, "screenshots": ["01-open.png"]}
// or {"id": 1, "ok": false, "error": "...", "screenshots": [...]}.
// Every step saves at least one screenshot into $E2E_ARTIFACTS. The driver observes and reports
// what VS Code shows; the Python test decides what is right.
//
// Needs: playwright-core installed by scripts/vscode-e2e/install.sh under $AGENT_HOST_E2E_DIR,
// and /usr/bin/chromium.
//
// What was learnt about VS Code 1.139.1's UI for agent-host sessions (with its reference agent host):
// * The chat view (secondary side bar) lists agent-host agents in the "session target" picker at
//   the bottom of the chat input (`.chat-session-target-picker-item`, labelled "Local" at first);
//   its rows are `.monaco-list-row.action` with aria-label "<displayName>, <description>".
//   Picking one makes VS Code call createSession at once (channel `<provider>:/<uuid>`).
// * Models: the model picker (`.model-picker-item`), rows with aria-label "<name>, ..."; more sit
//   under a collapsed "Other Models" row.
// * Messages are typed in the Monaco editor of `.interactive-input-part`, sent with Enter;
//   requests and responses are `.interactive-item-container.interactive-request/-response`
//   rows of a virtualized list, the text in `.value`, the markdown in `.chat-markdown-part`.
// * While a turn runs the send button is `.codicon-stop-circle` ("Cancel (Ctrl+Escape)").
// * A tool confirmation is a `.chat-confirmation-widget-container` with a title ("Run in
//   terminal?") and buttons Allow / Skip.
// * Changed files show as "N file changed +a -d" in the response (`.chat-turn-pills-part`) and a
//   pill above the input ("View Branch Changes" / "View Uncommitted Changes").
// * The Sessions list shows when the chat view is maximized (`.agent-session-item-row`); after a
//   page reload the old conversation is reached from there.
// * "Developer: Inspect Agent Host Subscriptions" opens an untitled Markdown document.
// * With workspace trust on (code-server without --disable-workspace-trust), a folder VS Code does
//   not trust yet opens in Restricted Mode (a banner on top, "Restricted Mode" in the status bar,
//   shown a few seconds after the workbench; code-server shows no start-up dialog). Picking an
//   agent still creates a session there, but sending a message first shows VS Code's modal
//   `.monaco-dialog-box` "Do you trust the authors of the files in this folder?" ("AI features are
//   currently only supported in trusted workspaces.") with Manage / Cancel / "Trust Folder &
//   Continue"; the message is sent only once the folder is trusted.

import { createRequire } from 'node:module';
import { mkdirSync, writeFileSync, appendFileSync } from 'node:fs';
import { join } from 'node:path';
import { createInterface } from 'node:readline';

const installDir = process.env.AGENT_HOST_E2E_DIR || join(process.env.HOME, '.cache', 'agent-host-e2e');
const artifacts = process.env.E2E_ARTIFACTS || join(process.cwd(), 'artifacts');
const profiles = process.env.E2E_PROFILES || join(artifacts, 'profiles');
mkdirSync(artifacts, { recursive: true });
const require = createRequire(join(installDir, 'driver', 'package.json'));
const { chromium } = require('playwright-core');

const CHROMIUM_FLAGS = [
  '--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run',
  '--disable-background-networking', '--disable-component-update', '--disable-sync',
];
const VIEWPORT = { width: 1600, height: 1000 };
// The rows of the chat list itself (not of the lists nested in responses, such as changed files).
const CHAT_ROWS = '.interactive-session .interactive-list > .monaco-list > .monaco-scrollable-element > .monaco-list-rows > .monaco-list-row[data-index]';

const log = (...parts) => process.stderr.write(parts.join(' ') + '\n');
const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

let shotNumber = 0;
let shots = [];
const pages = {};   // name -> { context, page }
let baseUrl = null;

async function screenshot(page, name) {
  shotNumber += 1;
  const file = `${String(shotNumber).padStart(2, '0')}-${name}.png`;
  try {
    await page.screenshot({ path: join(artifacts, file) });
    shots.push(file);
  } catch (error) {
    log('screenshot failed:', file, error.message);
  }
  return file;
}

async function newWindow(name) {
  // Each window gets its own fresh profile (--user-data-dir): a separate VS Code client.
  const profile = join(profiles, name);
  const context = await chromium.launchPersistentContext(profile, {
    executablePath: '/usr/bin/chromium', headless: true, args: CHROMIUM_FLAGS, viewport: VIEWPORT,
  });
  await context.grantPermissions(['clipboard-read', 'clipboard-write'], { origin: new URL(baseUrl).origin });
  const page = context.pages()[0] || await context.newPage();
  page.on('console', (message) => {
    if (message.type() === 'error' || message.type() === 'warning') {
      appendFileSync(join(artifacts, `console-${name}.log`), `[${message.type()}] ${message.text()}\n`);
    }
  });
  page.on('pageerror', (error) => appendFileSync(join(artifacts, `console-${name}.log`), `[pageerror] ${error.message}\n`));
  pages[name] = { context, page };
  return page;
}

function pageOf(args) {
  const entry = pages[args.window || 'main'];
  if (!entry) throw new Error(`no window named ${args.window || 'main'}; run "open" first`);
  return entry.page;
}

// -- the workbench -----------------------------------------------------------------------------

async function loadWorkbench(page) {
  await page.waitForSelector('.monaco-workbench', { timeout: 90000 });
  await page.locator('.interactive-input-part .monaco-editor').first().waitFor({ state: 'visible', timeout: 90000 });
  await sleep(1500);
  await maximizeChat(page);
}

// VS Code's own "Do you trust the authors of the files in this folder?" dialog, if it shows within
// `timeoutMs`: its text and buttons.
async function trustDialog(page, timeoutMs) {
  const dialog = page.locator('.monaco-dialog-box:visible').first();
  try {
    await dialog.waitFor({ state: 'visible', timeout: timeoutMs });
  } catch {
    return { shown: false };
  }
  const message = (await dialog.innerText()).trim();
  const buttons = (await dialog.locator('a.monaco-button').allInnerTexts()).map((text) => text.trim()).filter(Boolean);
  await screenshot(page, 'trust-dialog');
  return { shown: true, message, buttons };
}

// Presses "Trust Folder & Continue" (`choice` "trust") or Cancel ("cancel") in that dialog.
async function answerTrustDialog(page, choice) {
  const dialog = page.locator('.monaco-dialog-box:visible').first();
  await dialog.locator('a.monaco-button', { hasText: choice === 'trust' ? /^Trust Folder/ : /^Cancel$/ }).first().click();
  await dialog.waitFor({ state: 'hidden', timeout: 10000 });
}

async function maximizeChat(page) {
  // A maximized chat view shows the Sessions list beside the conversation.
  // The same button restores when the view is maximized; only its label tells which it does.
  const maximize = page.locator('.action-label.codicon-auxiliarybar-maximize[aria-label^="Maximize"]:visible');
  if (await maximize.count()) {
    await maximize.first().click();
    await sleep(800);
  }
}

// Whether the window is in Restricted Mode (its status bar says so).
async function restricted(page) {
  return page.evaluate(() => [...document.querySelectorAll('.part.statusbar .statusbar-item')]
    .some((item) => item.offsetParent !== null && /Restricted Mode/.test(item.innerText + ' ' + (item.getAttribute('aria-label') || ''))));
}

async function runCommand(page, title) {
  await page.keyboard.press('Escape');
  await page.keyboard.press('F1');
  const input = page.locator('.quick-input-widget input');
  await input.waitFor({ state: 'visible', timeout: 10000 });
  await input.fill(`>${title}`);
  const row = page.locator('.quick-input-widget .monaco-list-row', { hasText: title }).first();
  await row.waitFor({ state: 'visible', timeout: 10000 });
  await row.click();
}

async function visibleRows(page) {
  return page.evaluate(() => [...document.querySelectorAll('.context-view .monaco-list-row, .monaco-list-row.action')]
    .filter((row) => row.offsetParent !== null)
    .map((row) => ({
      label: row.getAttribute('aria-label') || row.textContent.trim(),
      disabled: row.classList.contains('disabled') || /Disabled Reason/.test(row.getAttribute('aria-label') || ''),
      classes: row.className,
    })));
}

// The rows of the session-target ("harness") picker: Local, then one per agent-host agent.
async function readTargets(page) {
  await page.keyboard.press('Escape');
  await page.locator('.chat-session-target-picker-item .action-label').first().click();
  await sleep(700);
  const rows = (await visibleRows(page)).filter((row) => row.classes.includes('action'));
  await page.keyboard.press('Escape');
  return rows.map((row) => ({ name: row.label.split(', ')[0], label: row.label, disabled: row.disabled }));
}

// The picker is absent in a session that already has turns (its agent is fixed).
async function currentTarget(page) {
  const picker = page.locator('.chat-session-target-picker-item .action-label');
  return (await picker.count()) ? (await picker.first().textContent()).trim() : null;
}

async function placeholder(page) {
  const element = page.locator('.interactive-input-part .editorPlaceholder').first();
  return (await element.count()) ? (await element.textContent()).trim() : '';
}

async function readModels(page) {
  const picker = page.locator('.interactive-input-part .model-picker-item .action-label').first();
  if (!(await picker.count())) return { current: null, models: [] };
  const current = ((await picker.getAttribute('aria-label')) || '').replace(/^Models, /, '');
  await picker.click();
  await sleep(700);
  // Open every collapsed section ("Other Models").
  for (let i = 0; i < 5; i++) {
    const toggle = page.locator('.monaco-list-row.chat-model-picker-section-toggle:visible[aria-expanded="false"]');
    if (!(await toggle.count())) break;
    await toggle.first().click();
    await sleep(400);
  }
  const rows = (await visibleRows(page)).filter((row) => row.classes.includes('action') && !row.classes.includes('section-toggle'));
  await screenshot(page, 'models');
  await page.keyboard.press('Escape');
  return { current, models: rows.map((row) => row.label.split(', ')[0]) };
}

// The conversation shown in the chat view, read through the virtualized list from top to bottom.
async function transcript(page) {
  const list = page.locator('.interactive-session .interactive-list').first();
  if (!(await list.count())) return [];
  const box = await list.boundingBox();
  if (!box) return [];
  await page.mouse.move(box.x + box.width / 2, box.y + box.height / 2);
  const firstIndex = () => page.evaluate((selector) => Math.min(...[...document.querySelectorAll(selector)]
    .filter((row) => !row.classList.contains('monaco-tree-sticky-row')).map((row) => Number(row.dataset.index))), CHAT_ROWS);
  for (let i = 0; i < 40 && (await firstIndex()) > 0; i++) {
    await page.mouse.wheel(0, -box.height);
    await sleep(200);
  }
  await sleep(300);
  const seen = new Map();
  let lastKey = '';
  let stalls = 0;
  for (let i = 0; i < 60; i++) {
    const rows = await page.evaluate((selector) => [...document.querySelectorAll(selector)]
      .filter((row) => !row.classList.contains('monaco-tree-sticky-row'))
      .map((row) => {
        const container = row.querySelector('.interactive-item-container');
        const kind = container?.classList.contains('interactive-request') ? 'request'
          : container?.classList.contains('interactive-response') ? 'response' : null;
        const value = row.querySelector('.value');
        // The answer's own text: not what VS Code folds into a finished turn's "Completed N steps"
        // box (text before a tool call, the call), which shows only while someone holds it open.
        const markdown = [...row.querySelectorAll('.value .chat-markdown-part')]
          .filter((part) => !part.closest('.chat-thinking-box'))
          .map((part) => part.innerText.trim()).filter(Boolean);
        return { index: Number(row.dataset.index), kind, text: (value || row).innerText.trim(), markdown: markdown.join('\n') };
      }), CHAT_ROWS);
    for (const row of rows) if (row.kind) seen.set(row.index, row);
    const key = rows.map((row) => `${row.index}:${row.text.length}`).join(',');
    // Done when a wheel changed no row AND the list is scrolled to its end: a wheel moves the list
    // by less than it asks (Monaco scales it), so one may move it without any row entering or
    // leaving (the list renders only the rows in view), and on a busy machine it may not be
    // applied yet when the rows are read again. Stopping there missed the rows below (step h).
    if (key === lastKey) {
      const state = await listState(page);
      if (state.atEnd || ++stalls >= 8) break;
      log('transcript: a wheel changed no row before the end of the list', JSON.stringify(state));
      // Wheel elsewhere over the list next time; after two such wheels, VS Code's own "scroll
      // down" button (shown while the list is not at its end).
      await page.mouse.move(box.x + box.width * (stalls % 2 ? 0.2 : 0.5), box.y + box.height / 2);
      const down = page.locator('.interactive-session .chat-scroll-down:visible').first();
      if (stalls >= 2 && (await down.count())) {
        await down.click().catch(() => {});
        await sleep(400);
        continue;
      }
    } else {
      stalls = 0;
    }
    lastKey = key;
    await page.mouse.wheel(0, box.height * 0.7);
    await sleep(250);
  }
  return [...seen.values()].sort((a, b) => a.index - b.index).map(({ kind, text, markdown }) => ({ kind, text, markdown }));
}

// Where the chat list stands: the size VS Code gives its rows (aria-setsize; 4 for step g's four
// turns, 5 once a fifth is painted), the highest rendered row index, whether its scroll bar is at
// the end.
async function listState(page) {
  return page.evaluate((selector) => {
    const rows = [...document.querySelectorAll(selector)].filter((row) => !row.classList.contains('monaco-tree-sticky-row'));
    const size = Math.max(-1, ...rows.map((row) => Number(row.getAttribute('aria-setsize') || -1)));
    const scrollable = document.querySelector('.interactive-session .interactive-list > .monaco-list > .monaco-scrollable-element');
    const slider = scrollable?.querySelector(':scope > .scrollbar.vertical > .slider');
    const track = slider?.parentElement;
    const atEnd = !slider || slider.offsetParent === null || !track
      || slider.offsetTop + slider.offsetHeight >= track.clientHeight - 2;
    return { setSize: size, lastRendered: Math.max(-1, ...rows.map((row) => Number(row.dataset.index))), atEnd };
  }, CHAT_ROWS);
}

async function lastResponse(page) {
  return page.evaluate(() => {
    const responses = [...document.querySelectorAll('.interactive-session .interactive-item-container.interactive-response')];
    const last = responses[responses.length - 1];
    if (!last) return null;
    const markdown = [...last.querySelectorAll('.value .chat-markdown-part')].map((part) => part.innerText.trim()).filter(Boolean).join('\n');
    return { text: (last.querySelector('.value') || last).innerText.trim(), markdown, classes: last.className };
  });
}

async function isRunning(page) {
  return (await page.locator('.interactive-input-part .codicon-stop-circle:visible').count()) > 0;
}

async function confirmationWidget(page) {
  return page.evaluate(() => {
    const widget = [...document.querySelectorAll('.chat-confirmation-widget-container')].find((element) => element.offsetParent !== null);
    if (!widget) return null;
    const title = widget.querySelector('.chat-confirmation-widget-title, .title')?.innerText.trim() || '';
    const buttons = [...widget.querySelectorAll('a.monaco-button')].filter((button) => button.offsetParent !== null)
      .map((button) => button.textContent.trim()).filter(Boolean);
    return { title, text: widget.innerText.trim(), buttons };
  });
}

async function errorsShown(page) {
  return page.evaluate(() => [...document.querySelectorAll('.notifications-toasts .notification-list-item-message, .interactive-session .chat-error-message, .interactive-session .codicon-error')]
    .filter((element) => element.offsetParent !== null)
    .map((element) => (element.closest('.notification-list-item, .interactive-item-container') || element).innerText.trim().slice(0, 500)));
}

async function typeMessage(page, text) {
  await page.locator('.interactive-input-part .monaco-editor').first().click();
  await page.keyboard.type(text);
  await page.keyboard.press('Enter');
}

// The dropdown arrow beside the confirmation button named `label`.
function confirmationDropdown(page, label) {
  return page.locator('.chat-confirmation-widget-container .monaco-button-dropdown:visible', { hasText: new RegExp(`^${label}$`) })
    .first().locator('.monaco-dropdown-button');
}

// The visible confirmation's buttons, each with the entries of its dropdown (opened and closed again).
async function confirmationChoices(page) {
  const buttons = [];
  const groups = page.locator('.chat-confirmation-widget-container .monaco-button-dropdown:visible, .chat-confirmation-widget-container a.monaco-button.monaco-text-button:visible');
  const labels = (await groups.allInnerTexts()).map((text) => text.trim()).filter(Boolean);
  for (const label of [...new Set(labels)]) {
    const arrow = confirmationDropdown(page, label);
    let more = [];
    if (await arrow.count()) {
      await arrow.click();
      await sleep(700);
      more = await page.evaluate(() => [...document.querySelectorAll('.context-view .action-label, .monaco-menu .action-label')]
        .filter((element) => element.offsetParent !== null).map((element) => element.innerText.trim()).filter(Boolean));
      await screenshot(page, 'confirmation-dropdown');
      await page.keyboard.press('Escape');
      await sleep(300);
    }
    buttons.push({ label, more });
  }
  return buttons;
}

// The chat view's header: the title VS Code shows for the open chat.
async function chatHeader(page) {
  const label = page.locator('.chat-view-title-label:visible').first();
  return (await label.count()) ? (await label.innerText()).trim() : null;
}

// Waits for the turn just sent: samples the last response while it streams; stops when the turn
// ends, when a confirmation asks for the user (if stopAtConfirmation), or at the timeout.
async function followTurn(page, { timeoutMs = 60000, stopAtConfirmation = true, name = 'turn' } = {}) {
  const started = Date.now();
  const samples = [];
  let midShot = null;
  let sawRunning = false;
  let confirmation = null;
  while (Date.now() - started < timeoutMs) {
    const running = await isRunning(page);
    sawRunning ||= running;
    const response = await lastResponse(page);
    const length = response ? response.markdown.length : 0;
    if (!samples.length || samples[samples.length - 1].length !== length) {
      samples.push({ ms: Date.now() - started, length });
      if (!midShot && length > 0 && running) midShot = await screenshot(page, `${name}-streaming`);
    }
    confirmation = await confirmationWidget(page);
    if (confirmation && stopAtConfirmation) break;
    if (sawRunning && !running && length > 0) break;
    if (!sawRunning && Date.now() - started > 5000 && length > 0) break; // finished before we looked
    await sleep(100);
  }
  await sleep(500);
  return { samples, sawRunning, running: await isRunning(page), confirmation, response: await lastResponse(page), errors: await errorsShown(page) };
}

// -- steps ----------------------------------------------------------------------------------------

const steps = {
  // An open window of the same name is reused: it goes to the folder (same profile, same VS Code state).
  async open(args) {
    baseUrl = args.url;
    const page = pages[args.window || 'main']?.page || await newWindow(args.window || 'main');
    await page.goto(`${args.url}/?folder=${encodeURIComponent(args.folder)}`);
    await loadWorkbench(page);
    // VS Code settles a folder's trust a while after the workbench shows: with `restrictedWithinMs`
    // the step waits that long for Restricted Mode to show.
    const deadline = Date.now() + (args.restrictedWithinMs || 0);
    while (Date.now() < deadline && !(await restricted(page))) await sleep(250);
    await screenshot(page, `open-${args.window || 'main'}`);
    return { title: await page.title(), target: await currentTarget(page), placeholder: await placeholder(page), restricted: await restricted(page) };
  },

  // Polls the session-target picker until every name in `expect` is listed (or the timeout).
  async agents(args) {
    const page = pageOf(args);
    const expect = args.expect || [];
    const deadline = Date.now() + (args.timeoutMs || 30000);
    let targets = [];
    do {
      targets = await readTargets(page);
      if (expect.every((name) => targets.some((target) => target.name === name))) break;
      await sleep(1000);
    } while (Date.now() < deadline);
    await page.locator('.chat-session-target-picker-item .action-label').first().click();
    await sleep(500);
    await screenshot(page, 'agents');
    await page.keyboard.press('Escape');
    return { targets };
  },

  async pickAgent(args) {
    const page = pageOf(args);
    if (args.newChat) {
      await page.locator('.action-label.codicon-plus:visible').first().click();
      await sleep(1000);
    }
    await page.keyboard.press('Escape');
    await page.locator('.chat-session-target-picker-item .action-label').first().click();
    await sleep(700);
    const rows = page.locator('.monaco-list-row.action:visible');
    const labels = await rows.evaluateAll((elements) => elements.map((element) => element.getAttribute('aria-label') || ''));
    const index = labels.findIndex((label) => label === args.name || label.startsWith(`${args.name}, `));
    if (index < 0) throw new Error(`no agent named ${args.name} in the picker: ${JSON.stringify(labels)}`);
    await rows.nth(index).click({ timeout: 10000 });
    const deadline = Date.now() + 15000;
    while (Date.now() < deadline && (await currentTarget(page)) !== args.name) await sleep(250);
    await sleep(1500);
    await screenshot(page, `agent-${args.name.replace(/\W+/g, '_')}`);
    const models = await readModels(page);
    return { target: await currentTarget(page), placeholder: await placeholder(page), ...models, errors: await errorsShown(page) };
  },

  // With `trustDialog` ("trust", "cancel" or "leave"), VS Code's workspace trust dialog, if it
  // shows, is answered first; after "cancel" nothing is sent, and with "leave" the dialog stays
  // open (answer it with the step trustDialog): both return at once.
  async send(args) {
    const page = pageOf(args);
    await typeMessage(page, args.text);
    let dialog = null;
    if (args.trustDialog) {
      dialog = await trustDialog(page, args.trustDialogWithinMs || 15000);
      if (dialog.shown && args.trustDialog !== 'leave') await answerTrustDialog(page, args.trustDialog);
      if (dialog.shown && args.trustDialog !== 'trust') {
        await screenshot(page, args.name || 'send');
        return { trustDialog: dialog, restricted: await restricted(page), response: await lastResponse(page), errors: await errorsShown(page) };
      }
    }
    const turn = await followTurn(page, { timeoutMs: args.timeoutMs, stopAtConfirmation: args.stopAtConfirmation !== false, name: args.name || 'send' });
    await screenshot(page, args.name || 'send');
    return { ...turn, trustDialog: dialog, restricted: await restricted(page) };
  },

  // Answers the workspace trust dialog a `send` left open (`choice` "trust" or "cancel"); after
  // "trust" it follows the turn VS Code then starts.
  async trustDialog(args) {
    const page = pageOf(args);
    const dialog = await trustDialog(page, 5000);
    if (!dialog.shown) throw new Error('no workspace trust dialog is open');
    await answerTrustDialog(page, args.choice);
    const turn = args.choice === 'trust' ? await followTurn(page, { timeoutMs: args.timeoutMs, name: args.name || 'after-trust' }) : {};
    await screenshot(page, args.name || 'after-trust');
    return { ...turn, trustDialog: dialog, restricted: await restricted(page) };
  },

  // Answers the visible tool confirmation with the button named `choice`, or with the entry
  // containing `more` of that button's dropdown, then follows the turn.
  async confirm(args) {
    const page = pageOf(args);
    const deadline = Date.now() + (args.timeoutMs || 30000);
    let widget = null;
    while (Date.now() < deadline && !(widget = await confirmationWidget(page))) await sleep(200);
    if (!widget) throw new Error('no tool confirmation appeared');
    await screenshot(page, 'confirmation');
    const choice = args.choice || 'Allow';
    if (args.more) {
      await confirmationDropdown(page, choice).click();
      await sleep(700);
      const entry = page.locator('.context-view .action-label:visible, .monaco-menu .action-label:visible', { hasText: args.more }).first();
      await screenshot(page, 'confirmation-choices');
      await entry.click();
    } else {
      await page.locator('.chat-confirmation-widget-container a.monaco-button:visible', { hasText: new RegExp(`^${choice}$`) }).first().click();
    }
    const turn = await followTurn(page, { timeoutMs: args.timeoutMs || 60000, name: 'after-confirmation' });
    await screenshot(page, 'confirmed');
    return { widget, ...turn };
  },

  // Sends a message, waits for `afterChars` characters of the answer, presses Cancel, then
  // watches for two seconds whether the answer still grows.
  async cancel(args) {
    const page = pageOf(args);
    await typeMessage(page, args.text);
    const deadline = Date.now() + (args.timeoutMs || 30000);
    let response = null;
    while (Date.now() < deadline) {
      response = await lastResponse(page);
      if (response && response.markdown.length >= (args.afterChars || 20)) break;
      await sleep(100);
    }
    await screenshot(page, 'cancel-before');
    const stop = page.locator('.interactive-input-part .codicon-stop-circle:visible');
    const couldCancel = (await stop.count()) > 0;
    if (couldCancel) await stop.first().click();
    await sleep(500);
    const atCancel = await lastResponse(page);
    await sleep(2000);
    const after = await lastResponse(page);
    await screenshot(page, 'cancel-after');
    return { couldCancel, atCancel, after, running: await isRunning(page), errors: await errorsShown(page) };
  },

  // The "N files changed" summary of the last response, expanded to list the files, and the
  // changes pill above the input, opened (VS Code shows a multi-file diff editor).
  async changes(args) {
    const page = pageOf(args);
    const header = page.locator('.interactive-response .chat-turn-pills-part summary.checkpoint-file-changes-summary-header:visible').last();
    let summary = null;
    let files = [];
    if (await header.count()) {
      summary = await header.getAttribute('aria-label');
      await header.click();
      await sleep(1000);
      files = await page.evaluate(() => {
        const parts = [...document.querySelectorAll('.interactive-response .chat-turn-pills-part details[open]')];
        const last = parts[parts.length - 1];
        return last ? [...last.querySelectorAll('.monaco-list-row')].map((row) => (row.getAttribute('aria-label') || row.innerText).trim()) : [];
      });
    }
    const pill = page.locator('.chat-input-surface-stack .monaco-button:visible, .interactive-input-part .monaco-button:visible', { hasText: /\d+ Files?/ });
    const pills = (await pill.allInnerTexts().catch(() => [])).map((text) => text.replace(/\s+/g, ' ').trim());
    await screenshot(page, 'changes');
    let opened = [];
    if (await pill.count()) {
      await pill.first().click();
      await sleep(2500);
      opened = await page.evaluate(() => [...document.querySelectorAll('.editor-group-container .tab .label-name, .multi-diff-editor .header .label-name, .monaco-diff-editor')]
        .filter((element) => element.offsetParent !== null).map((element) => element.innerText.replace(/\s+/g, ' ').trim().slice(0, 200)));
      await screenshot(page, 'changes-opened');
      // Close the diff again: VS Code attaches the active editor to the next message as implicit
      // context, hidden live but shown as a chip once the chat is reloaded (step g would then
      // compare a message VS Code painted differently, whatever the host kept).
      await runCommand(page, 'View: Close All Editors');
      await maximizeChat(page);
    }
    return { summary, files, pills, opened };
  },

  async transcript(args) {
    const page = pageOf(args);
    const result = await transcript(page);
    await screenshot(page, args.name || 'transcript');
    return { transcript: result };
  },

  // Waits until the chat view shows every text in `texts` (a turn from another client).
  async waitForTexts(args) {
    const page = pageOf(args);
    const deadline = Date.now() + (args.timeoutMs || 30000);
    let seen = [];
    while (Date.now() < deadline) {
      seen = await transcript(page);
      const all = seen.map((item) => item.text).join('\n');
      if (args.texts.every((text) => all.includes(text))) break;
      log('waitForTexts: not yet shown', JSON.stringify(await listState(page)), JSON.stringify(seen.map((item) => `${item.kind}: ${item.text.slice(0, 60)}`)));
      await sleep(500);
    }
    await screenshot(page, args.name || 'wait-for-texts');
    return { transcript: seen };
  },

  // The buttons of the visible tool confirmation and the entries of their dropdowns.
  async choices(args) {
    const page = pageOf(args);
    const deadline = Date.now() + (args.timeoutMs || 30000);
    while (Date.now() < deadline && !(await confirmationWidget(page))) await sleep(200);
    if (!(await confirmationWidget(page))) throw new Error('no tool confirmation appeared');
    return { buttons: await confirmationChoices(page) };
  },

  // Waits until the chat view's header reads `expect` (or the timeout); returns what it reads.
  async header(args) {
    const page = pageOf(args);
    const deadline = Date.now() + (args.timeoutMs || 15000);
    let header = await chatHeader(page);
    while (Date.now() < deadline && args.expect && header !== args.expect) {
      await sleep(250);
      header = await chatHeader(page);
    }
    await screenshot(page, args.name || 'header');
    return { header };
  },

  // "Fork conversation from this point" on the chat's last request: scrolls to the bottom, hovers
  // it, presses the fork button of its checkpoint bar, waits until the header changes; returns
  // the forked chat.
  async fork(args) {
    const page = pageOf(args);
    const before = await chatHeader(page);
    const list = page.locator('.interactive-session .interactive-list').first();
    const box = await list.boundingBox();
    if (box) {
      await page.mouse.move(box.x + box.width / 2, box.y + box.height / 2);
      for (let i = 0; i < 30; i++) await page.mouse.wheel(0, box.height);
      await sleep(800);
    }
    const rows = page.locator(CHAT_ROWS, { has: page.locator('.interactive-item-container.interactive-request') });
    const count = await rows.count();
    if (!count) throw new Error('no request is shown');
    const row = rows.nth(count - 1);
    await row.scrollIntoViewIfNeeded();
    await row.hover();
    await sleep(600);
    const fork = row.locator('.chat-fork-action-label:visible');
    if (!(await fork.count())) throw new Error('no "Fork conversation from this point" button on the last request');
    await screenshot(page, 'fork-button');
    await fork.first().click();
    const deadline = Date.now() + (args.timeoutMs || 30000);
    while (Date.now() < deadline && (await chatHeader(page)) === before) await sleep(250);
    await sleep(1500);
    const result = await transcript(page);
    await screenshot(page, args.name || 'forked');
    return { header: await chatHeader(page), transcript: result, errors: await errorsShown(page) };
  },

  async sessions(args) {
    const page = pageOf(args);
    await maximizeChat(page);
    const rows = await page.evaluate(() => [...document.querySelectorAll('.agent-session-item-row')]
      .filter((row) => row.offsetParent !== null).map((row) => row.getAttribute('aria-label') || row.innerText.trim()));
    await screenshot(page, 'sessions');
    return { sessions: rows };
  },

  // Opens a session from the Sessions list by (part of) its title.
  async openSession(args) {
    const page = pageOf(args);
    await maximizeChat(page);
    const row = page.locator('.agent-session-item-row', { hasText: args.title }).first();
    await row.waitFor({ state: 'visible', timeout: args.timeoutMs || 30000 });
    await row.click();
    await sleep(3000);
    const result = await transcript(page);
    await screenshot(page, `session-${args.name || 'opened'}`);
    return { transcript: result, target: await currentTarget(page) };
  },

  async reload(args) {
    const page = pageOf(args);
    await page.reload();
    await loadWorkbench(page);
    await screenshot(page, 'reloaded');
    return { target: await currentTarget(page), placeholder: await placeholder(page) };
  },

  // "Developer: Inspect Agent Host Subscriptions": the Markdown report VS Code writes of what it
  // holds from the agent host (root state, subscriptions). Saved as inspect-<name>.md.
  async inspect(args) {
    const page = pageOf(args);
    await runCommand(page, 'Developer: Inspect Agent Host Subscriptions');
    const editor = page.locator('.editor-group-container.active .monaco-editor .view-lines').first();
    await editor.waitFor({ state: 'visible', timeout: 15000 });
    await sleep(800);
    await screenshot(page, `inspect-${args.name || 'report'}`);
    await editor.click();
    await page.keyboard.press('Control+A');
    await page.keyboard.press('Control+C');
    await sleep(300);
    const text = await page.evaluate(() => navigator.clipboard.readText());
    writeFileSync(join(artifacts, `inspect-${args.name || 'report'}.md`), text);
    await runCommand(page, 'View: Revert and Close Editor');
    await sleep(500);
    await maximizeChat(page);
    return { text };
  },

  async screenshot(args) {
    await screenshot(pageOf(args), args.name || 'screenshot');
    return {};
  },

  async close() {
    for (const { context } of Object.values(pages)) await context.close().catch(() => {});
    return {};
  },
};

// -- the line protocol --------------------------------------------------------------------------

const input = createInterface({ input: process.stdin });
for await (const line of input) {
  if (!line.trim()) continue;
  let request;
  try {
    request = JSON.parse(line);
  } catch (error) {
    process.stdout.write(JSON.stringify({ id: null, ok: false, error: `bad request line: ${error.message}` }) + '\n');
    continue;
  }
  shots = [];
  const step = steps[request.step];
  let answer;
  try {
    if (!step) throw new Error(`unknown step ${request.step}`);
    log(`${new Date().toISOString()} ${request.step} ${(request.args || {}).name || ''}`);
    const result = await step(request.args || {});
    answer = { id: request.id, ok: true, result, screenshots: shots };
  } catch (error) {
    const page = pages[(request.args || {}).window || 'main']?.page;
    if (page) await screenshot(page, `${request.step}-failed`);
    answer = { id: request.id, ok: false, error: String(error && error.stack || error), screenshots: shots };
  }
  process.stdout.write(JSON.stringify(answer) + '\n');
  if (request.step === 'close') break;
}
process.exit(0);
