// The editor: a form and a YAML view of the same task. The schedule is
// previewed on every keystroke (the API's /cron/next) in the chosen zone,
// with daylight-saving changes marked; an error the API names a field of
// is shown at that field. An edit sends only what changed, as a merge
// patch on the version it was read at.
import { h, clear, api, qs, fmtTime, debounce, errorBox, field, showFieldError, toast } from '../lib.js';

const ENUMS = {
  http_method: ['POST', 'GET', 'PUT', 'PATCH', 'DELETE'],
  exec_type: ['SYNC', 'ASYNC'],
  dst: ['vixie', 'skip_gap', 'repeat'],
  overlap_action: ['ALLOW', 'SKIP', 'CANCEL_PREV', 'PARALLEL'],
  failure_action: ['RUN_NEW', 'SKIP', 'RETRY'],
  concurrency_policy: ['QUEUE', 'SKIP', 'PARALLEL'],
  catch_up_mode: ['NONE', 'COMPACT', 'FULL'],
};

// The fields of the form, in order, and how each reads and writes.
const FIELDS = [
  ['name', 'Name', 'text'],
  ['description', 'Description', 'text'],
  ['labels', 'Labels', 'kv', 'One key=value a line.'],
  ['cron_expr', 'Schedule (cron)', 'text', 'Six fields with seconds (0 30 9 * * MON-FRI), five without, or @every 90s, @daily…'],
  ['timezone', 'Time zone', 'zone'],
  ['dst', 'Daylight saving', 'enum'],
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

const zones = (Intl.supportedValuesOf ? Intl.supportedValuesOf('timeZone') : []).concat('UTC');

export async function render(main, id) {
  const orig = id ? await api('GET', '/tasks/' + id) : null;
  const controls = {};
  for (const [name, , kind] of FIELDS) controls[name] = control(name, kind);
  const form = h('form', { class: 'editor', novalidate: true, onsubmit: e => { e.preventDefault(); save(); } });
  const preview = h('div', { class: 'preview', id: 'cron-preview', 'aria-live': 'polite' });
  const yaml = h('pre', { class: 'yaml', tabindex: '0', 'aria-label': 'The task as YAML' });
  const formErr = h('div', { role: 'alert' });

  const values = orig ? fromTask(orig) : { timezone: Intl.DateTimeFormat().resolvedOptions().timeZone || 'UTC', http_method: 'POST',
    exec_type: 'SYNC', dst: 'vixie', overlap_action: 'ALLOW', failure_action: 'RUN_NEW', concurrency_policy: 'QUEUE', catch_up_mode: 'NONE',
    timeout_seconds: '0', max_concurrency: '0', cron_expr: '0 */5 * * * *' };
  for (const [name, , kind] of FIELDS) setValue(controls[name], kind, values[name]);

  const tabForm = h('button', { type: 'button', role: 'tab', id: 'tab-form', 'aria-selected': 'true', 'aria-controls': 'panel-form', onclick: () => tab('form') }, 'Form');
  const tabYaml = h('button', { type: 'button', role: 'tab', id: 'tab-yaml', 'aria-selected': 'false', 'aria-controls': 'panel-yaml', tabindex: '-1', onclick: () => tab('yaml') }, 'YAML');
  const panelForm = h('div', { role: 'tabpanel', id: 'panel-form', 'aria-labelledby': 'tab-form' });
  const panelYaml = h('div', { role: 'tabpanel', id: 'panel-yaml', 'aria-labelledby': 'tab-yaml', hidden: true },
    h('p', { class: 'muted' }, 'What sundial apply reads; the form is the place to change it.'), yaml);

  for (const [name, label, kind, hint] of FIELDS) {
    const f = field(label, controls[name], hint);
    if (name === 'cron_expr') f.append(preview);
    panelForm.append(f);
  }
  form.append(h('div', { role: 'tablist', 'aria-label': 'View', class: 'tabs' }, tabForm, tabYaml), panelForm, panelYaml, formErr,
    h('div', { class: 'actions' }, h('button', { type: 'submit', class: 'primary' }, orig ? 'Save' : 'Create'),
      h('a', { class: 'button', href: orig ? '#/tasks/' + orig.id : '#/tasks' }, 'Cancel')));
  clear(main,
    h('p', { class: 'crumbs' }, h('a', { href: '#/tasks' }, 'Tasks'), ' / ', orig ? [h('a', { href: '#/tasks/' + orig.id }, orig.name), ' / edit'] : 'new'),
    h('h1', {}, orig ? 'Edit ' + orig.name : 'New task'), form);

  function tab(which) {
    const y = which === 'yaml';
    tabForm.setAttribute('aria-selected', String(!y));
    tabYaml.setAttribute('aria-selected', String(y));
    tabForm.tabIndex = y ? -1 : 0;
    tabYaml.tabIndex = y ? 0 : -1;
    panelForm.hidden = y;
    panelYaml.hidden = !y;
    if (y) yaml.textContent = toYAML(request());
  }
  form.querySelector('[role=tablist]').addEventListener('keydown', e => {
    if (e.key === 'ArrowRight' || e.key === 'ArrowLeft') {
      const y = tabYaml.getAttribute('aria-selected') !== 'true';
      tab(y ? 'yaml' : 'form');
      (y ? tabYaml : tabForm).focus();
    }
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

  function request() {
    const out = {};
    for (const [name, , kind] of FIELDS) {
      const v = getValue(controls[name], kind);
      if (v !== undefined) out[name] = v;
    }
    return out;
  }

  async function save() {
    clear(formErr);
    let body;
    try {
      body = request();
    } catch (e) {
      showFieldError(form, e);
      return;
    }
    try {
      let t;
      if (orig) {
        const patch = {};
        const before = fromTask(orig);
        for (const [name, , kind] of FIELDS) {
          if (JSON.stringify(getValue(controls[name], kind)) !== JSON.stringify(parseAs(kind, before[name]))) patch[name] = body[name] === undefined ? null : body[name];
        }
        patch.version = orig.version;
        t = await api('PATCH', '/tasks/' + orig.id, patch);
      } else {
        t = await api('POST', '/tasks', body);
      }
      toast((orig ? 'Saved ' : 'Created ') + t.name);
      location.hash = '#/tasks/' + t.id;
    } catch (e) {
      if (!showFieldError(form, e)) clear(formErr, errorBox(e));
      else clear(formErr, h('p', { class: 'error' }, 'Not saved: ' + (e.field || '') + ': ' + e.message));
    }
  }
}

function control(name, kind) {
  const attrs = { name, id: 'f-' + name };
  switch (kind) {
    case 'enum': return h('select', attrs, ENUMS[name].map(v => h('option', { value: v }, v)));
    case 'kv': case 'headers': case 'area': case 'json': return h('textarea', Object.assign(attrs, { rows: kind === 'area' || kind === 'json' ? 4 : 3, spellcheck: 'false' }));
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

function fromTask(t) {
  const v = {};
  for (const [name, , kind] of FIELDS) {
    const x = t[name];
    if (kind === 'kv') v[name] = Object.entries(x || {}).map(([k, val]) => k + '=' + val).join('\n');
    else if (kind === 'headers') v[name] = Object.entries(x || {}).map(([k, val]) => k + ': ' + val).join('\n');
    else if (kind === 'json') v[name] = x == null ? '' : JSON.stringify(x, null, 2);
    else v[name] = x == null ? '' : String(x);
  }
  return v;
}

function setValue(el, kind, v) { el.value = v == null ? '' : v; }

function getValue(el, kind) { return parseAs(kind, el.value, el.name); }

function parseAs(kind, raw, name) {
  const s = (raw || '').trim();
  switch (kind) {
    case 'kv': {
      const out = {};
      for (const line of s.split('\n').map(l => l.trim()).filter(Boolean)) {
        const i = line.indexOf('=');
        out[i < 0 ? line : line.slice(0, i).trim()] = i < 0 ? '' : line.slice(i + 1).trim();
      }
      return out;
    }
    case 'headers': {
      const out = {};
      for (const line of s.split('\n').map(l => l.trim()).filter(Boolean)) {
        const i = line.indexOf(':');
        if (i < 0) throw Object.assign(new Error('want Name: value, not "' + line + '"'), { field: name || 'headers' });
        out[line.slice(0, i).trim()] = line.slice(i + 1).trim();
      }
      return out;
    }
    case 'json':
      if (!s) return undefined;
      try { return JSON.parse(s); } catch (e) { throw Object.assign(new Error('not JSON: ' + e.message), { field: name }); }
    case 'int': return s === '' ? 0 : Number(s);
    default: return s;
  }
}

// toYAML writes a task's request as YAML: keys in form order, strings
// quoted as JSON strings are (valid YAML), maps and lists nested.
export function toYAML(obj, indent = '') {
  let out = '';
  for (const [k, v] of Object.entries(obj)) {
    if (v === '' || v === undefined || (v && typeof v === 'object' && Object.keys(v).length === 0)) continue;
    const key = /^[A-Za-z0-9_.\/-]+$/.test(k) ? k : JSON.stringify(k);
    if (v && typeof v === 'object' && !Array.isArray(v)) out += indent + key + ':\n' + toYAML(v, indent + '  ');
    else if (Array.isArray(v)) out += indent + key + ':\n' + v.map(x => indent + '  - ' + JSON.stringify(x) + '\n').join('');
    else out += indent + key + ': ' + (typeof v === 'string' ? JSON.stringify(v) : String(v)) + '\n';
  }
  return out;
}
