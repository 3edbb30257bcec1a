// The approvals inbox's page script (served by the coordinator at /inbox/assets/inbox.js).
// Plain browser JavaScript, no framework and no build step: the list comes from one EventSource
// (server-sent events), answers are same-origin POSTs, and every text is set with textContent.

const BASE = '/inbox';
const state = { items: new Map(), selected: undefined, skewMs: 0, who: undefined, notified: 0 };
const $ = (id) => document.getElementById(id);

/** An element with attributes and children (strings become text nodes). */
function el(tag, attrs, ...children) {
  const node = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs ?? {})) {
    if (k === 'class') node.className = v;
    else if (k.startsWith('on')) node.addEventListener(k.slice(2), v);
    else if (v !== undefined && v !== false) node.setAttribute(k, v === true ? '' : String(v));
  }
  for (const c of children.flat()) if (c !== undefined && c !== null) node.append(c);
  return node;
}

function duration(ms) {
  const s = Math.max(0, Math.round(ms / 1000));
  if (s < 60) return `${s}s`;
  const m = Math.floor(s / 60);
  if (m < 60) return `${m}m ${String(s % 60).padStart(2, '0')}s`;
  return `${Math.floor(m / 60)}h ${String(m % 60).padStart(2, '0')}m`;
}

const now = () => Date.now() + state.skewMs;
const sorted = () =>
  [...state.items.values()].sort(
    (a, b) =>
      a.createdAt - b.createdAt || a.round.localeCompare(b.round) || a.order - b.order || a.id.localeCompare(b.id),
  );
const kindLabel = (item) =>
  item.type === 'confirmation' ? 'approval' : item.kind === 'interactive' ? 'question' : item.kind;

function setStatus(text, isError) {
  const status = $('status');
  status.textContent = text;
  status.className = isError ? 'error' : '';
}

function timesOf(item) {
  return `waited ${duration(now() - item.createdAt)} · ${duration(item.deadline - now())} left`;
}

function renderList() {
  const list = $('list');
  const items = sorted();
  if (state.selected && !state.items.has(state.selected)) state.selected = items[0]?.id;
  if (!state.selected) state.selected = items[0]?.id;
  list.replaceChildren(
    ...items.map((item) =>
      el(
        'li',
        {
          class: item.id === state.selected ? 'item selected' : 'item',
          'data-id': item.id,
          'aria-selected': item.id === state.selected ? 'true' : 'false',
          onclick: () => select(item.id),
        },
        el('span', { class: `badge ${item.type}` }, kindLabel(item)),
        el('strong', { class: 'tool' }, item.name),
        el('span', { class: 'where' }, `${item.session} / ${item.run}`),
        el('span', { class: 'times', 'data-times': item.id }, timesOf(item)),
      ),
    ),
  );
  $('empty').hidden = items.length > 0;
  renderDetail();
}

function argsBlock(display) {
  if (display.kind === 'shell')
    return el(
      'div',
      { class: 'args' },
      el('pre', { class: 'shell' }, el('code', {}, `$ ${display.command}`)),
      display.rest ? el('pre', { class: 'json' }, display.rest) : undefined,
    );
  if (display.kind === 'diff') {
    const sign = { same: ' ', del: '-', add: '+', skip: '…' };
    return el(
      'div',
      { class: 'args' },
      el('p', { class: 'path' }, display.path, display.note ? el('span', { class: 'note' }, ` (${display.note})`) : ''),
      el(
        'pre',
        { class: 'diff' },
        ...display.lines.map((l) => el('span', { class: `line ${l.op}` }, `${sign[l.op]} ${l.text}\n`)),
      ),
    );
  }
  return el('div', { class: 'args' }, el('pre', { class: 'json' }, display.text));
}

async function post(path, body) {
  const answer = await fetch(`${BASE}/api/${path}`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify(body),
    credentials: 'same-origin',
  });
  const data = await answer.json().catch(() => ({}));
  if (!answer.ok) throw new Error(data?.error?.message ?? `HTTP ${answer.status}`);
  return data;
}

/** Posts an answer; the item leaves the list at once (its `gone` event follows from the server). */
async function answer(item, path, body, done) {
  try {
    await post(`sessions/${encodeURIComponent(item.session)}/${path}/${encodeURIComponent(item.id)}`, body);
    state.items.delete(item.id);
    setStatus(done, false);
    renderList();
  } catch (e) {
    setStatus(`${item.name}: ${e.message}`, true);
  }
}

const approve = (item, grant) =>
  answer(
    item,
    'confirmations',
    { approve: true, ...(grant ? { grant } : {}) },
    `approved ${item.name}${grant ? ' with a grant' : ''}`,
  );
const deny = (item) => answer(item, 'confirmations', { approve: false }, `denied ${item.name}`);
const output = (item, value) => answer(item, 'inputs', { output: value }, `answered ${item.name}`);

function grantForm(item) {
  const select = (name, label, options) =>
    el('label', {}, label, el('select', { name }, ...options.map(([value, text]) => el('option', { value }, text))));
  const form = el(
    'form',
    { class: 'grant', 'aria-label': 'Approve with a grant' },
    select('scope', 'Allow ', [
      ['args', 'this exact call'],
      ['tool', `any ${item.name} call`],
    ]),
    select('where', ' in ', [
      ['session', 'the session'],
      ['run', 'this run'],
    ]),
    select('ttl', ' for ', [
      ['900000', '15 min'],
      ['3600000', '1 h'],
      ['', 'the session'],
    ]),
    el('button', { type: 'submit', class: 'approve' }, 'Approve with grant'),
  );
  form.addEventListener('submit', (e) => {
    e.preventDefault();
    const f = new FormData(form);
    const ttl = f.get('ttl');
    const grant = {
      scope: f.get('scope'),
      ...(f.get('where') === 'run' ? { run: true } : {}),
      ...(ttl ? { ttlMs: Number(ttl) } : {}),
    };
    approve(item, grant);
  });
  return form;
}

/** Inputs for an object schema's properties (strings, numbers, booleans, enums); anything else as JSON text. */
function schemaFields(schema) {
  const props = schema && typeof schema.properties === 'object' ? schema.properties : {};
  const required = new Set(Array.isArray(schema?.required) ? schema.required : []);
  return Object.entries(props).map(([name, p]) => {
    const label = `${p.title ?? name}${required.has(name) ? ' *' : ''}`;
    let input;
    if (Array.isArray(p.enum))
      input = el('select', { name }, ...p.enum.map((v) => el('option', { value: String(v) }, String(v))));
    else if (p.type === 'boolean') input = el('input', { name, type: 'checkbox' });
    else if (p.type === 'number' || p.type === 'integer')
      input = el('input', {
        name,
        type: 'number',
        step: p.type === 'integer' ? '1' : 'any',
        required: required.has(name),
      });
    else if (p.type === 'string') input = el('input', { name, type: 'text', required: required.has(name) });
    else input = el('textarea', { name, 'data-json': 'true', rows: '3' }, '');
    input.dataset.type = p.type ?? 'json';
    return el('label', { class: 'field' }, label, p.description ? el('small', {}, p.description) : '', input);
  });
}

function formValues(form) {
  const content = {};
  for (const input of form.querySelectorAll('[name]')) {
    const type = input.dataset.type;
    if (type === 'boolean') content[input.name] = input.checked;
    else if (input.value === '') continue;
    else if (type === 'number' || type === 'integer') content[input.name] = Number(input.value);
    else if (type === 'json') content[input.name] = JSON.parse(input.value);
    else content[input.name] = input.value;
  }
  return content;
}

function elicitationForm(item, form) {
  const node = el(
    'form',
    { class: 'schema' },
    el('p', { class: 'question' }, form.message),
    ...schemaFields(form.schema),
  );
  const send = (action) => {
    try {
      const out = action === 'accept' ? { action, content: formValues(node) } : { action };
      output(item, out);
    } catch (e) {
      setStatus(`not JSON: ${e.message}`, true);
    }
  };
  node.addEventListener('submit', (e) => {
    e.preventDefault();
    send('accept');
  });
  node.append(
    el('button', { type: 'submit', class: 'approve' }, 'Accept'),
    el('button', { type: 'button', onclick: () => send('decline') }, 'Decline'),
    el('button', { type: 'button', onclick: () => send('cancel') }, 'Cancel'),
  );
  return node;
}

function jsonForm(item) {
  const area = el('textarea', { name: 'output', rows: '6', 'aria-label': 'Output (JSON)' }, '{}');
  const reason = el('input', {
    type: 'text',
    name: 'error',
    placeholder: 'or an error message',
    'aria-label': 'Error message',
  });
  const node = el('form', { class: 'json-answer' }, area);
  node.addEventListener('submit', (e) => {
    e.preventDefault();
    try {
      output(item, JSON.parse(area.value));
    } catch (err) {
      setStatus(`not JSON: ${err.message}`, true);
    }
  });
  node.append(
    el('button', { type: 'submit', class: 'approve' }, 'Send output'),
    reason,
    el(
      'button',
      {
        type: 'button',
        onclick: () =>
          reason.value && answer(item, 'inputs', { error: reason.value }, `answered ${item.name} with an error`),
      },
      'Send error',
    ),
  );
  return node;
}

function answerBlock(item) {
  const form = item.form;
  if (form.kind === 'confirm')
    return el(
      'div',
      { class: 'answers' },
      el('button', { type: 'button', class: 'approve', onclick: () => approve(item) }, 'Approve (a)'),
      el('button', { type: 'button', class: 'deny', onclick: () => deny(item) }, 'Deny (d)'),
      grantForm(item),
    );
  if (form.kind === 'choices')
    return el(
      'div',
      { class: 'answers' },
      el('p', { class: 'question' }, form.question),
      ...form.choices.map((c) =>
        el('button', { type: 'button', class: 'choice', onclick: () => output(item, { answer: c }) }, c),
      ),
    );
  if (form.kind === 'text') {
    const text = el('input', { type: 'text', name: 'answer', 'aria-label': 'Answer', required: true });
    const node = el(
      'form',
      { class: 'answers' },
      el('p', { class: 'question' }, form.question),
      text,
      el('button', { type: 'submit', class: 'approve' }, 'Send'),
    );
    node.addEventListener('submit', (e) => {
      e.preventDefault();
      output(item, { answer: text.value });
    });
    return node;
  }
  if (form.kind === 'elicitation') return elicitationForm(item, form);
  return jsonForm(item);
}

async function loadContext(item, box) {
  try {
    const path = `${BASE}/api/sessions/${encodeURIComponent(item.session)}/runs/${encodeURIComponent(item.run)}/history`;
    const answerOf = await fetch(path, { credentials: 'same-origin' });
    const { history } = await answerOf.json();
    if (!history?.length) return box.replaceChildren(el('p', { class: 'muted' }, 'No earlier results in this run.'));
    box.replaceChildren(
      el(
        'table',
        {},
        el('thead', {}, el('tr', {}, el('th', {}, 'tool'), el('th', {}, 'status'), el('th', {}, 'result'))),
        el(
          'tbody',
          {},
          ...history.map((h) =>
            el(
              'tr',
              {},
              el('td', {}, h.name),
              el('td', { class: `st ${h.status.split(' ')[0]}` }, h.status),
              el('td', {}, el('code', {}, h.summary)),
            ),
          ),
        ),
      ),
    );
  } catch {
    box.replaceChildren(el('p', { class: 'muted' }, 'History could not be read.'));
  }
}

function renderDetail() {
  const detail = $('detail');
  const item = state.selected && state.items.get(state.selected);
  if (!item) return detail.replaceChildren();
  if (detail.dataset.id === item.id) return;
  detail.dataset.id = item.id;
  const context = el('div', { class: 'context' }, el('p', { class: 'muted' }, 'Loading the run’s history…'));
  detail.replaceChildren(
    el('h2', {}, el('span', { class: `badge ${item.type}` }, kindLabel(item)), ' ', item.name),
    el(
      'dl',
      { class: 'meta' },
      ...[
        ['session', item.session],
        ['run', item.run],
        ['round', item.round],
        ['call', item.callId],
        ['tenant', item.tenant],
      ].flatMap(([k, v]) => [el('dt', {}, k), el('dd', {}, v)]),
    ),
    el('p', { class: 'times', 'data-times': item.id }, timesOf(item)),
    argsBlock(item.display),
    answerBlock(item),
    el('h3', {}, 'Recent history of this run'),
    context,
  );
  loadContext(item, context);
}

function select(id) {
  state.selected = id;
  renderList();
}

function move(step) {
  const items = sorted();
  const at = items.findIndex((i) => i.id === state.selected);
  const next = items[Math.min(items.length - 1, Math.max(0, at + step))];
  if (next) select(next.id);
}

function notify(item) {
  state.notified++;
  document.body.dataset.notified = String(state.notified);
  if (!('Notification' in window) || Notification.permission !== 'granted') return;
  new Notification(`${kindLabel(item)}: ${item.name}`, { body: `${item.session} / ${item.run}`, tag: item.id });
}

function connect() {
  const source = new EventSource(`${BASE}/api/stream`);
  // "live" once the snapshot is shown, not at the open: until then the list is not current.
  source.addEventListener('open', () => {
    $('connection').textContent = 'loading…';
  });
  source.addEventListener('error', () => {
    $('connection').textContent = 'reconnecting…';
    $('connection').className = 'off';
  });
  source.addEventListener('snapshot', (e) => {
    const data = JSON.parse(e.data);
    state.skewMs = data.now - Date.now();
    state.who = data.who;
    $('who').textContent = `${data.who.name} (${data.who.role}, tenant ${data.who.tenant})`;
    state.items = new Map(data.items.map((i) => [i.id, i]));
    $('detail').dataset.id = '';
    renderList();
    $('connection').textContent = 'live';
    $('connection').className = 'on';
  });
  source.addEventListener('asked', (e) => {
    const item = JSON.parse(e.data);
    const fresh = !state.items.has(item.id);
    state.items.set(item.id, item);
    renderList();
    if (fresh) notify(item);
  });
  source.addEventListener('gone', (e) => {
    const { id } = JSON.parse(e.data);
    if (!state.items.delete(id)) return;
    if ($('detail').dataset.id === id) $('detail').dataset.id = '';
    renderList();
  });
}

function onKey(e) {
  if (
    e.target instanceof HTMLInputElement ||
    e.target instanceof HTMLTextAreaElement ||
    e.target instanceof HTMLSelectElement
  )
    return;
  if (e.ctrlKey || e.metaKey || e.altKey) return;
  const item = state.selected && state.items.get(state.selected);
  if (e.key === 'j') move(1);
  else if (e.key === 'k') move(-1);
  else if (e.key === 'a' && item?.type === 'confirmation') approve(item);
  else if (e.key === 'd' && item?.type === 'confirmation') deny(item);
}

document.addEventListener('DOMContentLoaded', () => {
  document.addEventListener('keydown', onKey);
  const button = $('notify');
  if (!('Notification' in window) || Notification.permission === 'granted') button.hidden = true;
  button.addEventListener('click', async () => {
    if ((await Notification.requestPermission()) === 'granted') button.hidden = true;
  });
  // A clock for "waited" and "left" only: the list itself changes by server-sent events alone.
  setInterval(() => {
    for (const node of document.querySelectorAll('[data-times]')) {
      const item = state.items.get(node.dataset.times);
      if (item) node.textContent = timesOf(item);
    }
  }, 1000);
  connect();
});
