// The editor: a form and a YAML view of one task. The YAML view is what
// `sundial apply` reads, every field of the task (an edit starts from the
// server's export of it); the form has controls for the fields used most.
// Both write one document: switching views carries the edits over, and a
// field the form has no control for is kept. The schedule is previewed on
// every keystroke (the API's /cron/next) in the chosen zone, with
// daylight-saving changes marked; an error the API names a field of is
// shown at that field, or at the YAML view when the form has none. An
// edit sends only what changed, as a merge patch on the version it was
// read at (a field removed is null: reset to its default).
import { h, clear, api, qs, can, session, fmtTime, debounce, errorBox, field, showFieldError, toast, dialog } from '../lib.js';

// js-yaml (vendor/, MIT), fetched when the editor opens: no other page
// loads it.
let yamlLib = null;
function loadYAML() {
  if (!yamlLib) yamlLib = import('../vendor/js-yaml.mjs').catch(e => { yamlLib = null; throw e; });
  return yamlLib;
}

const ENUMS = {
  http_method: ['POST', 'GET', 'PUT', 'PATCH', 'DELETE', 'HEAD'],
  exec_type: ['SYNC', 'ASYNC'],
  dst: ['vixie', 'skip_gap', 'repeat'],
  overlap_action: ['ALLOW', 'SKIP', 'CANCEL_PREV', 'PARALLEL'],
  failure_action: ['RUN_NEW', 'SKIP', 'RETRY'],
  concurrency_policy: ['QUEUE', 'SKIP', 'PARALLEL'],
  catch_up_mode: ['NONE', 'COMPACT', 'FULL'],
};

// What the form shows for a field the task leaves out: the API's default.
const DEFAULTS = {
  timezone: 'UTC', http_method: 'POST', exec_type: 'SYNC', dst: 'vixie', overlap_action: 'ALLOW', failure_action: 'RUN_NEW',
  concurrency_policy: 'QUEUE', catch_up_mode: 'NONE', timeout_seconds: 0, max_concurrency: 0, jitter_seconds: 0,
};

// The fields of the form, in order, and how each reads and writes.
const FIELDS = [
  ['name', 'Name', 'text'],
  ['description', 'Description', 'text'],
  ['labels', 'Labels', 'kv', 'One key=value a line.'],
  ['cron_expr', 'Schedule (cron)', 'text', 'Six fields with seconds (0 30 9 * * MON-FRI), five without, or @every 90s, @daily…'],
  ['timezone', 'Time zone', 'zone'],
  ['dst', 'Daylight saving', 'enum'],
  ['calendars', 'Calendars', 'list', 'One calendar name a line: a fire on one of their days is skipped.'],
  ['jitter_seconds', 'Jitter (s, 0: none)', 'int', 'Each fire is delayed by a random amount below this.'],
  ['depends_on', 'Runs after (parents)', 'deps', 'One parent task a line, by name, and optionally on success, failure or completion (my-parent failure).'],
  ['http_method', 'HTTP method', 'enum'],
  ['target_url', 'Target URL', 'url'],
  ['headers', 'Headers', 'headers', 'One Name: value a line. Secrets come back as ***, which keeps them.'],
  ['body_template', 'Body template', 'area', '{{run_id}}, {{scheduled_time}}, {{params}}…'],
  ['params', 'Params (JSON)', 'json'],
  ['exec_type', 'Execution', 'enum'],
  ['timeout_seconds', 'Timeout (s, 0: the server\'s)', 'int'],
  ['max_concurrency', 'Max concurrency (0: no limit)', 'int'],
  ['concurrency_policy', 'Concurrency policy', 'enum'],
  ['overlap_action', 'Overlap action', 'enum'],
  ['failure_action', 'Failure action', 'enum'],
  ['catch_up_mode', 'Catch-up mode', 'enum'],
  ['retry_policy', 'Retry policy (JSON)', 'json'],
];

// The fields a client writes, in the order the API answers them (and an
// export writes them): a field the form adds takes its place among them.
const ORDER = ['name', 'description', 'labels', 'cron_expr', 'run_at', 'delay_seconds', 'request_id', 'biz_id', 'params', 'timezone',
  'exec_type', 'http_method', 'target_url', 'headers', 'headers_json', 'body_template', 'timeout_seconds', 'retry_policy',
  'max_concurrency', 'concurrency_policy', 'max_queue', 'overlap_action', 'failure_action', 'catch_up_mode', 'catch_up_limit',
  'callback_method', 'callback_timeout_sec', 'starting_deadline_seconds', 'start_at', 'end_at', 'max_runs', 'jitter_seconds', 'dst',
  'calendars', 'pause_after_failures', 'depends_on', 'join', 'join_deadline_seconds', 'priority', 'follow_redirects',
  'signing_secret', 'oidc', 'status', 'disabled_reason'];

// The fields the server sets (api/changelog.go's serverSet): not in the
// YAML view, refused in a patch.
const SERVER_SET = ['id', 'version', 'created_at', 'updated_at', 'next_fire_time', 'disabled_at', 'disabled_by', 'state', 'fire_count'];

const zones = (Intl.supportedValuesOf ? Intl.supportedValuesOf('timeZone') : []).concat('UTC');

export async function render(main, id) {
  loadYAML().catch(() => {}); // fetched meanwhile; the YAML view says so if it fails
  const orig = id ? await api('GET', '/tasks/' + id) : null;
  // doc is the task as apply reads it: what both views show and edit.
  // base is it as read, what an edit's patch is worked out against.
  let doc = orig ? await exported(orig)
    : { name: '', cron_expr: '0 */5 * * * *', timezone: Intl.DateTimeFormat().resolvedOptions().timeZone || 'UTC', target_url: '' };
  const base = clone(doc);

  const controls = {};
  for (const [name, , kind] of FIELDS) controls[name] = control(name, kind);
  // shown is each control's text as the document last set it: a control
  // whose text is still that leaves the document's value as it is.
  const shown = {};
  const form = h('form', { class: 'editor', novalidate: true, onsubmit: e => { e.preventDefault(); save(); } });
  const preview = h('div', { class: 'preview', id: 'cron-preview', 'aria-live': 'polite' });
  const yamlArea = h('textarea', { name: 'yaml', id: 'f-yaml', class: 'yaml', rows: 24, spellcheck: 'false', autocomplete: 'off',
    autocapitalize: 'off', wrap: 'off' });
  const formErr = h('div', { role: 'alert' });
  // yamlText is the YAML view's text as last written or read; null when
  // the view is to be written anew from the document.
  let yamlText = null;

  const tabForm = h('button', { type: 'button', role: 'tab', id: 'tab-form', 'aria-selected': 'true', 'aria-controls': 'panel-form', onclick: () => tab('form') }, 'Form');
  const tabYaml = h('button', { type: 'button', role: 'tab', id: 'tab-yaml', 'aria-selected': 'false', 'aria-controls': 'panel-yaml', tabindex: '-1', onclick: () => tab('yaml') }, 'YAML');
  const panelForm = h('div', { role: 'tabpanel', id: 'panel-form', 'aria-labelledby': 'tab-form' });
  const panelYaml = h('div', { role: 'tabpanel', id: 'panel-yaml', 'aria-labelledby': 'tab-yaml', hidden: true },
    field('The task as YAML', yamlArea, 'What sundial apply reads: every field of the task, those the form has no control for too. ' +
      'A field removed takes its default.'));
  const yamlErr = panelYaml.querySelector('#f-yaml-err');
  yamlErr.setAttribute('role', 'alert');

  for (const [name, label, kind, hint] of FIELDS) {
    const f = field(label, controls[name], hint);
    if (name === 'cron_expr') f.append(preview);
    panelForm.append(f);
  }
  docToForm();
  form.append(h('div', { role: 'tablist', 'aria-label': 'View', class: 'tabs' }, tabForm, tabYaml), panelForm, panelYaml, formErr,
    h('div', { class: 'actions' }, h('button', { type: 'submit', class: 'primary', disabled: !can('editor') }, orig ? 'Save' : 'Create'),
      h('a', { class: 'button', href: orig ? '#/tasks/' + orig.id : '#/tasks' }, 'Cancel')));
  clear(main,
    h('p', { class: 'crumbs' }, h('a', { href: '#/tasks' }, 'Tasks'), ' / ', orig ? [h('a', { href: '#/tasks/' + orig.id }, orig.name), ' / edit'] : 'new'),
    h('h1', {}, orig ? 'Edit ' + orig.name : 'New task'),
    // Saving needs the editor role: say so before the edits, not at the 403.
    can('editor') ? null : h('p', { class: 'banner', role: 'note' }, 'Your role (' + session.who.role + ') ' +
      (orig ? 'can read this task but not save it' : 'cannot create a task') + ': that needs the editor role.'),
    form);

  const onYAML = () => tabYaml.getAttribute('aria-selected') === 'true';

  function select(which) {
    const y = which === 'yaml';
    tabForm.setAttribute('aria-selected', String(!y));
    tabYaml.setAttribute('aria-selected', String(y));
    tabForm.tabIndex = y ? -1 : 0;
    tabYaml.tabIndex = y ? 0 : -1;
    panelForm.hidden = y;
    panelYaml.hidden = !y;
  }

  // tab switches views, carrying the edits of the one left over; it stays
  // (false) when they do not read: the error is shown where it is.
  async function tab(which) {
    if ((which === 'yaml') === onYAML()) return true;
    clearErrors();
    try {
      if (which === 'yaml') {
        if (formToDoc() || yamlText === null) await writeYAML();
      } else {
        await readYAML();
        docToForm();
        updatePreview();
      }
    } catch (e) {
      showError(e);
      return false;
    }
    select(which);
    return true;
  }
  form.querySelector('[role=tablist]').addEventListener('keydown', async e => {
    if (!['ArrowRight', 'ArrowLeft', 'Home', 'End'].includes(e.key)) return;
    e.preventDefault();
    const which = e.key === 'Home' ? 'form' : e.key === 'End' ? 'yaml' : onYAML() ? 'form' : 'yaml';
    if (await tab(which)) (which === 'yaml' ? tabYaml : tabForm).focus();
  });

  // The live preview, on every keystroke of the schedule or the zone.
  let seq = 0;
  const updatePreview = debounce(async () => {
    const n = ++seq;
    const expr = controls.cron_expr.value.trim();
    const tz = controls.timezone.value.trim() || 'UTC';
    if (!expr) { clear(preview, h('p', { class: 'muted' }, 'No schedule: a one-off task or one that runs after its parents.')); return; }
    try {
      const r = await api('GET', '/cron/next' + qs({ expr, tz, dst: controls.dst.value, count: 10 }));
      if (n !== seq) return;
      controls.cron_expr.removeAttribute('aria-invalid');
      clear(preview, h('p', { class: 'meaning' }, r.description + ' (' + r.timezone + ')'),
        h('ol', { class: 'times' }, r.next.map((x, i) => {
          const off = x.slice(19).replace(/^\.\d+/, '');
          const prev = i > 0 ? r.next[i - 1].slice(19).replace(/^\.\d+/, '') : off;
          return h('li', {}, fmtTime(x, r.timezone), off !== prev ? h('span', { class: 'dst' }, ' daylight saving: offset ' + prev + ' → ' + off) : null);
        })));
    } catch (e) {
      if (n !== seq) return;
      controls.cron_expr.setAttribute('aria-invalid', 'true');
      const which = e.field === 'tz' ? 'Time zone: ' : e.field === 'dst' ? 'Daylight saving: ' : '';
      clear(preview, h('p', { class: 'error' }, which + e.message + (e.token ? ' (at "' + e.token + '")' : '')));
    }
  }, 120);
  for (const n of ['cron_expr', 'timezone', 'dst']) controls[n].addEventListener('input', updatePreview);
  controls.dst.addEventListener('change', updatePreview);
  updatePreview();

  // docToForm sets every control from the document.
  function docToForm() {
    for (const [name, , kind] of FIELDS) {
      const el = controls[name];
      const text = display(kind, doc[name] == null ? DEFAULTS[name] : doc[name]);
      if (el.tagName === 'SELECT' && ![...el.options].some(o => o.value === text)) el.append(h('option', { value: text }, text));
      el.value = text;
      shown[name] = el.value;
    }
  }

  // formToDoc writes the controls changed since docToForm into the
  // document (an emptied one removes its field); it reports whether any
  // was. A control that does not read throws an error naming its field.
  function formToDoc() {
    const changed = {};
    for (const [name, , kind] of FIELDS) {
      const el = controls[name];
      if (el.value !== shown[name]) changed[name] = parseAs(kind, el.value, name);
    }
    const names = Object.keys(changed);
    for (const name of names) {
      if (isEmpty(changed[name])) delete doc[name];
      else doc[name] = changed[name];
      shown[name] = controls[name].value;
    }
    if (names.length) doc = ordered(doc);
    return names.length > 0;
  }

  async function writeYAML() {
    const y = await loadYAML();
    yamlArea.value = y.dump(doc, { lineWidth: -1, noRefs: true, quotingType: '"' });
    yamlText = yamlArea.value;
  }

  // readYAML reads the YAML view into the document, unless it is as
  // written; a syntax error throws its line and column.
  async function readYAML() {
    if (yamlText !== null && yamlArea.value === yamlText) return;
    const y = await loadYAML();
    let v;
    try {
      // The core schema: a time stays the string it is written as.
      v = y.load(yamlArea.value, { schema: y.CORE_SCHEMA });
    } catch (e) {
      const m = e.mark || {};
      throw { yaml: true, line: (m.line || 0) + 1, column: (m.column || 0) + 1, message: e.reason || e.message };
    }
    if (v == null) v = {};
    if (typeof v !== 'object' || Array.isArray(v)) {
      throw { yaml: true, line: 1, column: 1, message: 'a task is a mapping of field: value, not ' + (Array.isArray(v) ? 'a list' : 'a ' + typeof v) };
    }
    doc = v;
    yamlText = yamlArea.value;
  }

  function clearErrors() {
    clear(formErr);
    showFieldError(form, {});
  }

  // showError shows an error where it belongs: a YAML syntax error at its
  // line in the YAML view; one naming a field at the form's control of
  // it, else at the YAML view, at the field's line; any other under the
  // form. saving says whether a save was refused (else a switch of tabs).
  async function showError(e, saving) {
    clearErrors();
    const not = saving ? 'Not saved: ' : 'Not switched: ';
    if (e.yaml) {
      if (!onYAML()) select('yaml');
      markYAML(e.line, e.column, 'line ' + e.line + ', column ' + e.column + ': ' + e.message);
      clear(formErr, h('p', { class: 'error' }, not + 'the YAML does not read at line ' + e.line + ', column ' + e.column + '.'));
      return;
    }
    const at = e.field && (e.status === undefined || e.status === 400 || e.status === 422);
    if (at && controls[e.field.split(/[.[]/)[0]]) {
      if (onYAML()) select('form');
      showFieldError(form, e);
      clear(formErr, h('p', { class: 'error' }, not + e.field + ': ' + e.message));
      return;
    }
    if (at) {
      if (!onYAML()) {
        if (yamlText === null) await writeYAML();
        select('yaml');
      }
      const text = e.field + ': ' + e.message + (e.token ? ' (at "' + e.token + '")' : '');
      const key = e.field.split(/[.[]/)[0];
      const line = yamlArea.value.split('\n').findIndex(l => l.startsWith(key + ':') || l.startsWith('"' + key + '":')) + 1;
      markYAML(line, 1, line ? text + ' (line ' + line + ')' : text);
      clear(formErr, h('p', { class: 'error' }, not + text));
      return;
    }
    clear(formErr, errorBox(e));
  }

  function markYAML(line, column, text) {
    yamlArea.setAttribute('aria-invalid', 'true');
    yamlErr.textContent = text;
    yamlArea.focus();
    if (line > 0) {
      const lines = yamlArea.value.split('\n');
      let pos = Math.min(column - 1, (lines[line - 1] || '').length);
      for (let i = 0; i < line - 1 && i < lines.length; i++) pos += lines[i].length + 1;
      yamlArea.setSelectionRange(pos, pos);
    }
  }

  async function save() {
    clearErrors();
    try {
      if (onYAML()) {
        await readYAML();
        docToForm();
      } else if (formToDoc()) {
        yamlText = null; // to be written anew when shown
      }
    } catch (e) {
      showError(e, true);
      return;
    }
    try {
      let t;
      if (orig) {
        const patch = mergeDiff(base, doc);
        patch.version = orig.version;
        t = await api('PATCH', '/tasks/' + orig.id, patch);
      } else {
        t = await api('POST', '/tasks', doc);
      }
      if (t.signing_secret && t.signing_secret !== '***') {
        await dialog('The signing secret', h('p', {}, 'Shown this once: keep it where the target reads it. ', h('code', {}, t.signing_secret)),
          [{ label: 'Done', primary: true, value: true }]);
      }
      toast((orig ? 'Saved ' : 'Created ') + t.name);
      location.hash = '#/tasks/' + t.id;
    } catch (e) {
      showError(e, true);
    }
  }
}

// exported is task t as apply reads it: the server's export of it
// (GET /tasks?name=&format=json: the fields a client writes, less those at
// their default), or, when that does not give it (renamed meanwhile),
// t less the fields the server sets and those empty.
async function exported(t) {
  try {
    const all = await api('GET', '/tasks' + qs({ name: t.name, format: 'json' }));
    const mine = (all || []).find(x => x.name === t.name);
    if (mine) return mine;
  } catch { /* the fallback below */ }
  const out = {};
  for (const [k, v] of Object.entries(t)) if (!SERVER_SET.includes(k) && !isEmpty(v)) out[k] = v;
  return out;
}

function control(name, kind) {
  const attrs = { name, id: 'f-' + name };
  switch (kind) {
    case 'enum': return h('select', attrs, ENUMS[name].map(v => h('option', { value: v }, v)));
    case 'kv': case 'headers': case 'area': case 'json': case 'list': case 'deps':
      return h('textarea', Object.assign(attrs, { rows: kind === 'area' || kind === 'json' ? 4 : kind === 'list' || kind === 'deps' ? 2 : 3, spellcheck: 'false' }));
    case 'int': return h('input', Object.assign(attrs, { type: 'number', min: 0, step: 1 }));
    case 'url': return h('input', Object.assign(attrs, { type: 'url', spellcheck: 'false' }));
    case 'zone': {
      const list = h('datalist', { id: 'zones' }, zones.map(z => h('option', { value: z })));
      const input = h('input', Object.assign(attrs, { type: 'text', list: 'zones', autocomplete: 'off', spellcheck: 'false' }));
      if (!document.getElementById('zones')) document.body.append(list);
      return input;
    }
    default: return h('input', Object.assign(attrs, { type: 'text', spellcheck: 'false', autocomplete: 'off' }));
  }
}

const isObject = v => v !== null && typeof v === 'object' && !Array.isArray(v);

function isEmpty(v) {
  return v == null || v === '' || (typeof v === 'object' && Object.keys(v).length === 0);
}

// display is the text a control of kind shows for the value v. A value of
// another shape than the control's is shown as it is, and kept as it is
// while the control is not edited.
function display(kind, v) {
  if (v == null) return '';
  switch (kind) {
    case 'kv': return isObject(v) ? Object.entries(v).map(([k, x]) => k + '=' + x).join('\n') : String(v);
    case 'headers': return isObject(v) ? Object.entries(v).map(([k, x]) => k + ': ' + x).join('\n') : String(v);
    case 'json': return JSON.stringify(v, null, 2);
    case 'list': return Array.isArray(v) ? v.join('\n') : String(v);
    case 'deps': return Array.isArray(v) ? v.map(d => isObject(d) ? d.task + (d.on && d.on !== 'success' ? ' ' + d.on : '') : String(d)).join('\n') : String(v);
    default: return typeof v === 'object' ? JSON.stringify(v) : String(v);
  }
}

function parseAs(kind, raw, name) {
  const s = (raw || '').trim();
  const lines = () => s.split('\n').map(l => l.trim()).filter(Boolean);
  switch (kind) {
    case 'kv': {
      const out = {};
      for (const line of lines()) {
        const i = line.indexOf('=');
        out[i < 0 ? line : line.slice(0, i).trim()] = i < 0 ? '' : line.slice(i + 1).trim();
      }
      return out;
    }
    case 'headers': {
      const out = {};
      for (const line of lines()) {
        const i = line.indexOf(':');
        if (i < 0) throw Object.assign(new Error('want Name: value, not "' + line + '"'), { field: name });
        out[line.slice(0, i).trim()] = line.slice(i + 1).trim();
      }
      return out;
    }
    case 'list': return lines();
    case 'deps': return lines().map(line => {
      const [task, on, ...rest] = line.split(/\s+/);
      if (rest.length) throw Object.assign(new Error('want a task name and optionally success, failure or completion, not "' + line + '"'), { field: name });
      return on ? { task, on } : { task };
    });
    case 'json':
      if (!s) return undefined;
      try { return JSON.parse(s); } catch (e) { throw Object.assign(new Error('not JSON: ' + e.message), { field: name }); }
    case 'int': return s === '' ? 0 : Number(s);
    default: return s;
  }
}

// ordered is doc with its fields in the order of a task's, those the API
// does not know last.
function ordered(doc) {
  const out = {};
  for (const k of ORDER) if (Object.hasOwn(doc, k)) out[k] = doc[k];
  for (const k of Object.keys(doc)) if (!Object.hasOwn(out, k)) out[k] = doc[k];
  return out;
}

function clone(v) { return JSON.parse(JSON.stringify(v)); }

const same = (a, b) => JSON.stringify(a) === JSON.stringify(b);

// mergeDiff is the JSON merge patch (RFC 7396) that makes a into b, as
// "sundial task edit" makes it: b's members that differ (objects member by
// member), null for a's members b has not.
function mergeDiff(a, b) {
  const out = {};
  for (const k of Object.keys(b)) {
    if (Object.hasOwn(a, k) && same(a[k], b[k])) continue;
    if (Object.hasOwn(a, k) && isObject(a[k]) && isObject(b[k])) {
      const sub = mergeDiff(a[k], b[k]);
      if (Object.keys(sub).length) out[k] = sub;
    } else {
      out[k] = b[k];
    }
  }
  for (const k of Object.keys(a)) if (!Object.hasOwn(b, k)) out[k] = null;
  return out;
}
