// The console's shell: sign-in, the hash router, the navigation, the
// theme, the live-update control and keyboard shortcuts.
import { h, clear, api, session, setToken, can, hooks, live, startStream, stopStream, errorBox, field } from './lib.js';
import * as overview from './pages/overview.js';
import * as tasks from './pages/tasks.js';
import * as task from './pages/task.js';
import * as edit from './pages/edit.js';
import * as run from './pages/run.js';
import * as runs from './pages/runs.js';
import * as admin from './pages/admin.js';

const main = document.getElementById('main');

const routes = [
  [/^\/$/, overview.render, 'overview'],
  [/^\/tasks$/, tasks.render, 'tasks'],
  [/^\/tasks\/new$/, edit.render, 'tasks'],
  [/^\/tasks\/(\d+)$/, task.render, 'tasks'],
  [/^\/tasks\/(\d+)\/edit$/, edit.render, 'tasks'],
  [/^\/runs$/, runs.render, 'runs'],
  [/^\/runs\/(\d+)$/, run.render, 'runs'],
  [/^\/nodes$/, admin.nodes, 'nodes'],
  [/^\/incidents$/, admin.incidents, 'incidents'],
  [/^\/audit$/, admin.audit, 'audit'],
  [/^\/tokens$/, admin.tokens, 'tokens'],
];

const nav = [
  ['overview', '#/', 'Overview'],
  ['tasks', '#/tasks', 'Tasks'],
  ['runs', '#/runs', 'Runs'],
  ['nodes', '#/nodes', 'Nodes'],
  ['incidents', '#/incidents', 'Incidents'],
  ['audit', '#/audit', 'Audit', 'admin'],
  ['tokens', '#/tokens', 'Tokens', 'admin'],
];

let cleanup = null;

async function route() {
  const hash = location.hash || '#/';
  if (!hash.startsWith('#/')) return;
  const [path, query] = hash.slice(1).split('?');
  const params = new URLSearchParams(query || '');
  if (cleanup) { try { cleanup(); } catch { /* the page is gone */ } }
  cleanup = null;
  if (!session.who) return;
  for (const [re, render, section] of routes) {
    const m = path.match(re);
    if (!m) continue;
    drawNav(section);
    // Each visit renders into a fresh element: a late answer or event
    // of the page left behind draws into a detached one.
    const root = h('div', { class: 'page' }, h('p', { class: 'muted' }, 'Loading…'));
    clear(main, root);
    try {
      cleanup = (await render(root, m[1] || null, params)) || null;
    } catch (e) {
      clear(root, h('h1', {}, 'Error'), errorBox(e));
    }
    return;
  }
  drawNav('');
  clear(main, h('h1', {}, 'Not found'), h('p', {}, 'No page at ' + path + '. ', h('a', { href: '#/' }, 'Go to the overview')));
}

function drawNav(current) {
  clear(document.getElementById('nav'), nav.filter(n => !n[3] || can(n[3])).map(([key, href, label]) =>
    h('li', {}, h('a', { href, 'aria-current': key === current ? 'page' : null }, label))));
}

// ---- sign in

async function signIn() {
  try {
    session.who = await api('GET', '/whoami');
  } catch (e) {
    session.who = null;
    if (e.status === 401) return showSignIn(session.token ? 'That token was refused: ' + e.message : '');
    clear(main, h('h1', {}, 'Sundial'), errorBox(e));
    return;
  }
  const who = document.getElementById('who');
  who.textContent = session.who.auth_required ? session.who.actor + ' (' + session.who.role + ')' : '';
  document.getElementById('signout').hidden = !session.who.auth_required;
  document.getElementById('live').hidden = false;
  startStream();
  route();
}

function showSignIn(message) {
  stopStream();
  // Signed out, no page can be shown and no event comes: neither the
  // navigation nor the live control is offered.
  clear(document.getElementById('nav'));
  document.getElementById('live').hidden = true;
  const input = h('input', { type: 'password', name: 'token', autocomplete: 'off', required: true });
  const form = h('form', { class: 'signin', onsubmit: async e => {
    e.preventDefault();
    setToken(input.value.trim());
    await signIn();
  } },
  h('h1', {}, 'Sign in to Sundial'),
  h('p', {}, 'Authentication is on: paste an API token (', h('code', {}, 'sundial token create'), ' makes one). It is kept for this browser tab only.'),
  message ? errorBox(new Error(message)) : null,
  field('API token', input),
  h('button', { type: 'submit', class: 'primary' }, 'Sign in'));
  clear(main, form);
  input.focus();
}

hooks.unauthorized = () => {
  if (session.who) {
    session.who = null;
    showSignIn('The token is no longer valid.');
  }
};

document.getElementById('signout').addEventListener('click', () => {
  setToken('');
  session.who = null;
  document.getElementById('who').textContent = '';
  document.getElementById('signout').hidden = true;
  showSignIn('');
});

// ---- theme

const themeBtn = document.getElementById('theme');
function applyTheme(t) {
  document.documentElement.dataset.theme = t;
  themeBtn.textContent = t === 'dark' ? 'Light theme' : 'Dark theme';
  themeBtn.setAttribute('aria-label', 'Switch to the ' + (t === 'dark' ? 'light' : 'dark') + ' theme');
}
applyTheme(localStorage.getItem('sundial.theme') ||
  (matchMedia('(prefers-color-scheme: dark)').matches ? 'dark' : 'light'));
themeBtn.addEventListener('click', () => {
  const t = document.documentElement.dataset.theme === 'dark' ? 'light' : 'dark';
  localStorage.setItem('sundial.theme', t);
  applyTheme(t);
});

// ---- live updates

const liveBtn = document.getElementById('live');
function drawLive() {
  liveBtn.setAttribute('aria-pressed', String(!live.paused));
  liveBtn.textContent = live.paused
    ? 'Paused' + (live.missed ? ' (' + live.missed + ' new)' : '')
    : live.connected ? 'Live' : 'Live (connecting)';
  liveBtn.title = live.paused ? 'Live updates are paused: press to resume' : 'Live updates are on: press to pause';
  liveBtn.className = live.paused ? 'paused' : live.connected ? 'on' : '';
}
live.onChange = drawLive;
liveBtn.addEventListener('click', () => {
  live.paused = !live.paused;
  const missed = live.missed;
  live.missed = 0;
  drawLive();
  if (!live.paused && missed) route(); // show what changed meanwhile
});
drawLive();

// ---- keyboard: / search, j/k move through rows, g then a letter goes to a page

let pendingG = false;
document.addEventListener('keydown', e => {
  const t = e.target;
  if (e.ctrlKey || e.metaKey || e.altKey) return;
  if (t.closest && t.closest('input, textarea, select, [contenteditable], dialog')) return;
  if (e.key === '/') {
    const s = main.querySelector('input[type=search]');
    if (s) { e.preventDefault(); s.focus(); }
    return;
  }
  if (pendingG) {
    pendingG = false;
    const go = { o: '#/', t: '#/tasks', r: '#/runs', n: '#/nodes', i: '#/incidents', a: '#/audit', k: '#/tokens', c: '#/tasks/new' }[e.key];
    if (go) { location.hash = go; e.preventDefault(); }
    return;
  }
  if (e.key === 'g') { pendingG = true; return; }
  if (e.key === 'j' || e.key === 'k') {
    const links = [...main.querySelectorAll('tbody tr a.row-link')];
    if (!links.length) return;
    const i = links.indexOf(document.activeElement);
    const next = e.key === 'j' ? Math.min(i + 1, links.length - 1) : Math.max(i - 1, 0);
    links[next].focus();
    e.preventDefault();
  }
});

document.getElementById('skip').addEventListener('click', e => {
  e.preventDefault();
  main.focus();
});

window.addEventListener('hashchange', route);
signIn();
