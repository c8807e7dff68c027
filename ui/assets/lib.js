// The console's toolkit: a DOM builder, the API client, the session,
// times, the live event stream and dialogs. Every page is built with h(),
// which sets text, never HTML, so nothing the API returns is markup.

export function h(tag, attrs, ...kids) {
  const el = document.createElement(tag);
  setAttrs(el, attrs);
  append(el, kids);
  return el;
}

const SVGNS = 'http://www.w3.org/2000/svg';

export function svg(tag, attrs, ...kids) {
  const el = document.createElementNS(SVGNS, tag);
  for (const [k, v] of Object.entries(attrs || {})) if (v != null) el.setAttribute(k, v);
  append(el, kids);
  return el;
}

function setAttrs(el, attrs) {
  for (const [k, v] of Object.entries(attrs || {})) {
    if (v == null || v === false) continue;
    if (k.startsWith('on')) el.addEventListener(k.slice(2), v);
    else if (k === 'class') el.className = v;
    else if (k === 'value' || k === 'checked' || k === 'selected') el[k] = v;
    else if (k === 'dataset') Object.assign(el.dataset, v);
    else el.setAttribute(k, v === true ? '' : v);
  }
}

function append(el, kids) {
  for (const k of kids.flat(Infinity)) {
    if (k == null || k === false) continue;
    el.append(k instanceof Node ? k : String(k));
  }
}

export function clear(el, ...kids) {
  el.replaceChildren();
  append(el, kids);
  return el;
}

// ---- session and roles

const TOKEN_KEY = 'sundial.token';
export const session = { token: sessionStorage.getItem(TOKEN_KEY) || '', who: null };

export function setToken(token) {
  session.token = token;
  if (token) sessionStorage.setItem(TOKEN_KEY, token);
  else sessionStorage.removeItem(TOKEN_KEY);
}

const ROLES = ['viewer', 'operator', 'editor', 'admin'];

// can reports whether the signed-in role includes role.
export function can(role) {
  const have = session.who ? ROLES.indexOf(session.who.role) : -1;
  return have >= ROLES.indexOf(role);
}

// ---- the API

export class APIError extends Error {
  constructor(status, detail, text) {
    super((detail && detail.message) || text || 'HTTP ' + status);
    this.status = status;
    this.code = detail && detail.code;
    this.field = detail && detail.field;
    this.token = detail && detail.token;
  }
}

export const hooks = { unauthorized: () => {} };

export async function api(method, path, body, extraHeaders) {
  const headers = { Accept: 'application/json' };
  if (session.token) headers.Authorization = 'Bearer ' + session.token;
  let payload;
  if (method !== 'GET') headers['Content-Type'] = 'application/json';
  if (body !== undefined) payload = JSON.stringify(body);
  Object.assign(headers, extraHeaders || {});
  const res = await fetch('/api/v1' + path, { method, headers, body: payload });
  if (res.status === 204) return null;
  const text = await res.text();
  let data = null;
  try { data = text ? JSON.parse(text) : null; } catch { data = null; }
  if (!res.ok) {
    if (res.status === 401) hooks.unauthorized();
    throw new APIError(res.status, data && data.error, text);
  }
  return data;
}

export function qs(params) {
  const u = new URLSearchParams();
  for (const [k, v] of Object.entries(params)) if (v !== '' && v != null) u.set(k, v);
  const s = u.toString();
  return s ? '?' + s : '';
}

// explain returns the plain-English meaning of a cron expression, cached.
const explained = new Map();
export function explain(expr) {
  if (!explained.has(expr)) {
    explained.set(expr, api('GET', '/cron/next' + qs({ expr, count: 1 })).then(r => r.description, () => ''));
  }
  return explained.get(expr);
}

// ---- times

const viewerZone = Intl.DateTimeFormat().resolvedOptions().timeZone;
const formats = new Map();

function formatter(zone) {
  if (!formats.has(zone)) {
    try {
      formats.set(zone, new Intl.DateTimeFormat('en-GB', {
        timeZone: zone, year: 'numeric', month: '2-digit', day: '2-digit', hour: '2-digit',
        minute: '2-digit', second: '2-digit', hour12: false, timeZoneName: 'short' }));
    } catch {
      return formatter('UTC');
    }
  }
  return formats.get(zone);
}

// fmtTime writes an instant as YYYY-MM-DD HH:MM:SS ZONE in zone.
export function fmtTime(iso, zone) {
  if (!iso) return '';
  const d = new Date(iso);
  if (isNaN(d)) return String(iso);
  const p = {};
  for (const part of formatter(zone || 'UTC').formatToParts(d)) p[part.type] = part.value;
  return `${p.year}-${p.month}-${p.day} ${p.hour}:${p.minute}:${p.second} ${p.timeZoneName}`;
}

const rtf = new Intl.RelativeTimeFormat('en', { numeric: 'auto' });

// rel writes an instant relative to now: "in 5 minutes", "3 seconds ago".
export function rel(iso, now = Date.now()) {
  if (!iso) return '';
  const s = Math.round((new Date(iso) - now) / 1000);
  const a = Math.abs(s);
  if (a < 60) return rtf.format(s, 'second');
  if (a < 3600) return rtf.format(Math.round(s / 60), 'minute');
  if (a < 86400 * 2) return rtf.format(Math.round(s / 3600), 'hour');
  return rtf.format(Math.round(s / 86400), 'day');
}

// timeEl is an instant in the task's zone, the viewer's zone on hover.
export function timeEl(iso, zone, withRel) {
  if (!iso) return h('span', { class: 'muted' }, '—');
  return h('time', { datetime: iso, title: fmtTime(iso, viewerZone) + ' (your zone, ' + viewerZone + ')' },
    fmtTime(iso, zone), withRel ? h('span', { class: 'rel' }, ' (' + rel(iso) + ')') : null);
}

export function ms(n) {
  if (n == null) return '—';
  if (n < 1000) return n + ' ms';
  return (n / 1000).toFixed(n < 10000 ? 2 : 1) + ' s';
}

export function duration(from, to) {
  if (!from || !to) return null;
  return new Date(to) - new Date(from);
}

// ---- status

const FAILURES = ['FAILED', 'TIMEOUT', 'FAILED_TIMEOUT', 'CANCELED'];
export const FINAL = ['SUCCESS', 'SKIPPED', ...FAILURES];

export function statusClass(status) {
  if (status === 'SUCCESS' || status === 'ENABLED') return 'ok';
  if (FAILURES.includes(status) || status === 'FAILED' || status === 'OPEN') return 'bad';
  if (status === 'SKIPPED' || status === 'DISABLED' || status === 'COMPLETED') return 'off';
  return 'busy';
}

export function badge(status) {
  return h('span', { class: 'badge ' + statusClass(status) }, status);
}

// strip is a row of small marks, one per outcome, newest last.
export function strip(runs) {
  const items = [...(runs || [])].reverse();
  const counts = {};
  for (const r of items) counts[r.status] = (counts[r.status] || 0) + 1;
  const label = items.length
    ? 'last ' + items.length + ' outcomes: ' + Object.entries(counts).map(([s, n]) => n + ' ' + s).join(', ')
    : 'no outcome yet';
  return h('span', { class: 'strip', role: 'img', 'aria-label': label, title: label },
    items.map(r => h('span', { class: 'mark ' + statusClass(r.status),
      title: r.status + (r.skip_reason ? ' (' + r.skip_reason + ')' : '') + ' ' + fmtTime(r.scheduled_time, 'UTC') })));
}

// ---- live events

export const live = { paused: false, missed: 0, connected: false, handlers: new Set(), onChange: () => {} };

export function onEvent(fn) {
  live.handlers.add(fn);
  return () => live.handlers.delete(fn);
}

let streamCtl = null;

export function startStream() {
  stopStream();
  const ctl = new AbortController();
  streamCtl = ctl;
  let last = '';
  const loop = async () => {
    while (!ctl.signal.aborted) {
      try {
        const headers = { Accept: 'text/event-stream' };
        if (session.token) headers.Authorization = 'Bearer ' + session.token;
        const res = await fetch('/api/v1/events' + qs({ since: last }), { headers, signal: ctl.signal });
        if (!res.ok) throw new Error('HTTP ' + res.status);
        live.connected = true;
        live.onChange();
        const reader = res.body.pipeThrough(new TextDecoderStream()).getReader();
        let buf = '';
        for (;;) {
          const { value, done } = await reader.read();
          if (done) break;
          buf += value;
          let i;
          while ((i = buf.indexOf('\n\n')) >= 0) {
            const block = buf.slice(0, i);
            buf = buf.slice(i + 2);
            let data = '';
            for (const line of block.split('\n')) {
              if (line.startsWith('id:')) last = line.slice(3).trim();
              else if (line.startsWith('data:')) data += line.slice(5).trim();
            }
            if (data) dispatch(JSON.parse(data));
          }
        }
      } catch (e) {
        if (ctl.signal.aborted) return;
      }
      live.connected = false;
      live.onChange();
      await new Promise(r => setTimeout(r, 2000));
    }
  };
  loop();
}

export function stopStream() {
  if (streamCtl) streamCtl.abort();
  streamCtl = null;
}

function dispatch(ev) {
  if (live.paused) {
    live.missed++;
    live.onChange();
    return;
  }
  for (const fn of live.handlers) fn(ev);
}

// keepFocus runs redraw (a live update of root) and gives the focus back
// to the control that had it, found again by its tag, link and name: a
// redraw must not throw a keyboard user's place away on every event.
export async function keepFocus(root, redraw) {
  const had = document.activeElement;
  const key = had && had !== document.body && root.contains(had) ? focusKey(had) : null;
  await redraw();
  if (!key || document.activeElement === had) return;
  const again = [...root.querySelectorAll(had.tagName)].find(el => focusKey(el) === key);
  if (again) again.focus({ preventScroll: true });
}

function focusKey(el) {
  return el.tagName + '|' + (el.getAttribute('href') || '') + '|' + (el.getAttribute('name') || '') + '|' +
    (el.getAttribute('aria-label') || el.textContent);
}

// debounce calls fn at most once per wait ms, after the last call.
export function debounce(fn, wait) {
  let t = null;
  return (...args) => {
    clearTimeout(t);
    t = setTimeout(() => fn(...args), wait);
  };
}

// ---- dialogs and messages

// dialog opens a modal with body and buttons; it resolves with the value
// of the button chosen: what its onclick answered (it may return false to
// keep the dialog open), else its value, else true; null when closed.
export function dialog(title, body, buttons) {
  return new Promise(resolve => {
    const id = 'dlg-' + Math.random().toString(36).slice(2);
    const d = h('dialog', { 'aria-labelledby': id });
    const form = h('form', { method: 'dialog' },
      h('h2', { id }, title), body,
      h('p', { class: 'err', role: 'alert' }),
      h('div', { class: 'actions' },
        buttons.map(b => h('button', {
          type: 'button', class: b.primary ? 'primary' : b.danger ? 'danger' : '',
          onclick: async () => {
            const err = form.querySelector('.err');
            err.textContent = '';
            showFieldError(form, {});
            try {
              const v = b.onclick ? await b.onclick() : b.value;
              if (v === false) return;
              d.close();
              // An action whose answer is empty (a 204: DELETE) still
              // resolves as chosen, not as closed.
              resolve(v != null ? v : b.value !== undefined ? b.value : true);
            } catch (e) {
              // At the control the API names, if the dialog has it.
              if (!showFieldError(form, e)) err.textContent = e.message;
            }
          } }, b.label)),
        h('button', { type: 'button', onclick: () => { d.close(); resolve(null); } }, 'Cancel')));
    d.append(form);
    d.addEventListener('close', () => { d.remove(); resolve(null); });
    document.body.append(d);
    d.showModal();
  });
}

export function toast(text, bad) {
  const t = document.getElementById('toast');
  t.className = bad ? 'bad' : '';
  t.textContent = text;
  clearTimeout(toast.timer);
  toast.timer = setTimeout(() => { t.textContent = ''; }, 6000);
}

export function errorBox(e) {
  return h('p', { class: 'error', role: 'alert' }, e.message || String(e));
}

// field is a labelled form control with room for an error.
export function field(label, control, hint) {
  const id = control.id || (control.id = 'f-' + (control.name || Math.random().toString(36).slice(2)));
  const errId = id + '-err';
  control.setAttribute('aria-describedby', errId + (hint ? ' ' + id + '-hint' : ''));
  return h('div', { class: 'field' },
    h('label', { for: id }, label), control,
    hint ? h('small', { id: id + '-hint', class: 'muted' }, hint) : null,
    h('span', { id: errId, class: 'field-err' }));
}

// showFieldError puts an API error at the control the API names.
export function showFieldError(form, e) {
  for (const el of form.querySelectorAll('[aria-invalid]')) el.removeAttribute('aria-invalid');
  for (const el of form.querySelectorAll('.field-err')) el.textContent = '';
  if (!e.field) return false;
  const names = [e.field, e.field.split(/[.[]/)[0]];
  for (const n of names) {
    const el = form.querySelector(`[name="${CSS.escape(n)}"]`);
    if (el) {
      el.setAttribute('aria-invalid', 'true');
      const err = document.getElementById(el.id + '-err');
      if (err) err.textContent = e.message + (e.token ? ' (at "' + e.token + '")' : '');
      el.focus();
      return true;
    }
  }
  return false;
}

export function actionButton(label, onclick, cls) {
  return h('button', { type: 'button', class: cls || '', onclick }, label);
}

export function link(href, text, attrs) {
  return h('a', Object.assign({ href }, attrs || {}), text);
}

export function table(headers, rows, caption) {
  return h('table', {},
    caption ? h('caption', {}, caption) : null,
    h('thead', {}, h('tr', {}, headers.map(x => h('th', { scope: 'col' }, x)))),
    h('tbody', {}, rows));
}
