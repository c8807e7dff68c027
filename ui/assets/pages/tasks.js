// The tasks list: one row per task with its schedule and meaning, next
// fire, last outcomes, lag and status; search, selector and status
// filters; keyset pages; bulk actions on the rows chosen or a selector.
import { h, clear, api, qs, can, explain, timeEl, ms, badge, strip, onEvent, debounce, keepFocus, dialog, toast, errorBox, field, table } from '../lib.js';

const PAGE = 50;

export async function render(main, _id, params) {
  const state = {
    q: params.get('q') || '', selector: params.get('selector') || '', status: params.get('status') || '',
    cursors: [''], page: 0, items: [], next: '', selected: new Set(),
  };

  const search = h('input', { type: 'search', name: 'q', value: state.q, placeholder: 'Name contains…', 'aria-keyshortcuts': '/' });
  const selector = h('input', { type: 'text', name: 'selector', value: state.selector, placeholder: 'team=payments,env!=prod' });
  const status = h('select', { name: 'status' },
    ['', 'ENABLED', 'DISABLED', 'COMPLETED', 'FAILED'].map(s => h('option', { value: s, selected: s === state.status }, s || 'Any status')));
  const filterErr = h('div', { role: 'alert', class: 'error-slot' });
  const bulkBar = h('div', { class: 'bulk', role: 'region', 'aria-label': 'Bulk actions' });
  const body = h('div', { class: 'list' });
  const pager = h('div', { class: 'pager' });

  clear(main,
    h('div', { class: 'head' }, h('h1', {}, 'Tasks'),
      can('editor') ? h('a', { class: 'button primary', href: '#/tasks/new' }, 'New task') : null),
    h('form', { class: 'filters', role: 'search', onsubmit: e => { e.preventDefault(); reload(true); } },
      field('Search', search), field('Label selector', selector), field('Status', status)),
    filterErr, bulkBar, body, pager);

  const onFilter = debounce(() => reload(true), 250);
  search.addEventListener('input', onFilter);
  selector.addEventListener('input', onFilter);
  status.addEventListener('change', () => reload(true));

  async function reload(fromStart) {
    if (fromStart) {
      state.cursors = [''];
      state.page = 0;
      state.q = search.value.trim();
      state.selector = selector.value.trim();
      state.status = status.value;
      history.replaceState(null, '', '#/tasks' + qs({ q: state.q, selector: state.selector, status: state.status }));
    }
    let res;
    try {
      res = await api('GET', '/tasks' + qs({ limit: PAGE, recent: 20, name_contains: state.q, selector: state.selector,
        status: state.status, cursor: state.cursors[state.page] }));
    } catch (e) {
      clear(filterErr, errorBox(e));
      if (e.field === 'selector') selector.setAttribute('aria-invalid', 'true');
      return;
    }
    selector.removeAttribute('aria-invalid');
    clear(filterErr);
    state.items = res.items;
    state.next = res.next_cursor;
    for (const id of [...state.selected]) if (!res.items.some(t => t.id === id)) state.selected.delete(id);
    draw();
    // When the first rows are drawn, for the page-load test and the curious.
    if (res.items.length && !performance.getEntriesByName('sundial:tasks-rendered').length) performance.mark('sundial:tasks-rendered');
  }

  function draw() {
    const all = h('input', { type: 'checkbox', 'aria-label': 'Select every task on this page',
      checked: state.items.length > 0 && state.items.every(t => state.selected.has(t.id)),
      onchange: e => { for (const t of state.items) e.target.checked ? state.selected.add(t.id) : state.selected.delete(t.id); draw(); } });
    const rows = state.items.map(t => row(t));
    clear(body, state.items.length
      ? table([all, 'Name', 'Schedule', 'Zone', 'Next fire', 'Last 20', 'Lag p95', 'Failures', 'Status'], rows, 'Tasks, ' + state.items.length + ' on this page')
      : h('p', { class: 'empty' }, 'No task matches. ', can('editor') ? h('a', { href: '#/tasks/new' }, 'Create one') : null));
    clear(pager,
      h('button', { type: 'button', disabled: state.page === 0, onclick: () => { state.page--; reload(); } }, 'Previous page'),
      h('span', { class: 'muted' }, 'Page ' + (state.page + 1)),
      h('button', { type: 'button', disabled: !state.next, onclick: () => { state.cursors[state.page + 1] = state.next; state.page++; reload(); } }, 'Next page'));
    drawBulk();
  }

  function row(t) {
    const st = t.state || {};
    const sched = h('td', {}, t.cron_expr ? h('code', {}, t.cron_expr) : h('span', {}, 'once'));
    if (t.cron_expr) {
      const meaning = h('div', { class: 'muted small' });
      sched.append(meaning);
      explain(t.cron_expr).then(d => { meaning.textContent = d; });
    } else if (t.depends_on && t.depends_on.length) {
      sched.append(h('div', { class: 'muted small' }, 'after its parents'));
    }
    const check = h('input', { type: 'checkbox', 'aria-label': 'Select ' + t.name, checked: state.selected.has(t.id),
      onchange: e => { e.target.checked ? state.selected.add(t.id) : state.selected.delete(t.id); drawBulk(); } });
    return h('tr', { dataset: { id: t.id } },
      h('td', {}, check),
      h('td', {}, h('a', { class: 'row-link', href: '#/tasks/' + t.id }, t.name),
        h('div', { class: 'labels' }, Object.entries(t.labels || {}).map(([k, v]) => h('span', { class: 'chip' }, v ? k + '=' + v : k)))),
      sched,
      h('td', {}, t.timezone),
      h('td', {}, timeEl(st.next_fire_time || t.next_fire_time, t.timezone, true)),
      h('td', {}, strip(st.recent)),
      h('td', { class: 'num' }, ms(st.lag_p95_ms)),
      h('td', { class: 'num' }, st.consecutive_failures ? h('span', { class: 'bad-text' }, String(st.consecutive_failures)) : '0'),
      h('td', {}, badge(t.status)));
  }

  function drawBulk() {
    const n = state.selected.size;
    const acts = [];
    if (can('operator')) acts.push(['enable', 'Enable'], ['disable', 'Disable'], ['trigger', 'Trigger']);
    if (can('editor')) acts.push(['delete', 'Delete']);
    if (!acts.length) return clear(bulkBar);
    clear(bulkBar,
      h('span', {}, n ? n + ' selected:' : 'Select tasks for bulk actions'),
      n ? acts.map(([a, label]) => h('button', { type: 'button', class: a === 'delete' ? 'danger' : '', onclick: () => bulk(a, { ids: [...state.selected] }, n + ' selected tasks') }, label)) : null,
      state.selector ? h('span', { class: 'by-selector' }, 'Every task matching ', h('code', {}, state.selector), ':',
        acts.map(([a, label]) => h('button', { type: 'button', class: a === 'delete' ? 'danger' : '',
          onclick: () => bulk(a, { selector: state.selector }, 'every task matching ' + state.selector) }, label + ' all'))) : null);
  }

  async function bulk(action, target, what) {
    const ok = await dialog('Confirm: ' + action, h('p', {}, action[0].toUpperCase() + action.slice(1) + ' ' + what + '?'),
      [{ label: action[0].toUpperCase() + action.slice(1), value: true, danger: action === 'delete', primary: action !== 'delete' }]);
    if (!ok) return;
    try {
      const res = await api('POST', '/tasks:bulk', Object.assign({ action }, target));
      toast(action + ': ' + res.items.filter(i => i.ok).length + ' of ' + res.items.length + ' tasks done');
      state.selected.clear();
    } catch (e) {
      toast(e.message, true);
    }
    reload();
  }

  const refresh = debounce(() => keepFocus(main, reload), 300);
  const off = onEvent(ev => {
    if (!ev.task) return;
    if (state.items.some(t => t.id === ev.task.id) || (ev.kind === 'task.created' && state.page === 0)) refresh();
  });
  await reload();
  return off;
}
