// The cluster's nodes, incidents and alert rules, the audit log and the
// API tokens (the last two for admins).
import { h, clear, api, qs, can, timeEl, badge, dialog, toast, errorBox, field, showFieldError, table, live } from '../lib.js';

// nodes lists the cluster's nodes, read again every 5 seconds while
// shown and live updates are on (heartbeats have no event of their own),
// and this node's start compensator.
export async function nodes(main) {
  async function load() {
    const [res, comp] = await Promise.all([api('GET', '/nodes'), api('GET', '/admin/compensation').catch(() => null)]);
    clear(main, h('h1', {}, 'Nodes'),
      table(['Node', 'State', 'Address', 'Started', 'Heartbeat'], res.items.map(n => h('tr', {},
        h('td', {}, h('code', {}, n.id)), h('td', {}, h('span', { class: 'badge ' + (n.state === 'ALIVE' ? 'ok' : 'off') }, n.state)),
        h('td', {}, n.address || '—'), h('td', {}, timeEl(n.started_at, 'UTC', true)), h('td', {}, timeEl(n.heartbeat_at, 'UTC', true))))),
      comp ? [h('h2', {}, 'This node\'s start compensator'), h('dl', { class: 'def' },
        [['Interval', comp.interval_ms + ' ms'], ['Rounds', String(comp.rounds)], ['Compensated runs', String(comp.compensated_runs)]]
          .map(([k, v]) => [h('dt', {}, k), h('dd', {}, v)]))] : null);
  }
  await load();
  const timer = setInterval(() => { if (!document.hidden && !live.paused) load().catch(() => {}); }, 5000);
  return () => clearInterval(timer);
}

export async function incidents(main, _id, params) {
  const status = params.get('status') || '';
  const [inc, rules] = await Promise.all([
    api('GET', '/incidents' + qs({ status, limit: 100 })),
    api('GET', '/alert-rules').catch(() => ({ items: [] })),
  ]);
  const sel = h('select', { name: 'status', onchange: e => { location.hash = '#/incidents' + qs({ status: e.target.value }); } },
    ['', 'OPEN', 'RESOLVED'].map(s => h('option', { value: s, selected: s === status }, s || 'Any status')));
  clear(main, h('h1', {}, 'Incidents and alerts'),
    h('form', { class: 'filters' }, field('Status', sel)),
    inc.items.length ? table(['Incident', 'Task', 'Rule', 'Status', 'Reason', 'Opened', 'Resolved', 'Acknowledged'], inc.items.map(i => h('tr', {},
      h('td', {}, '#' + i.id), h('td', {}, h('a', { href: '#/tasks/' + i.task_id }, i.task)), h('td', {}, i.rule),
      h('td', {}, badge(i.status)), h('td', {}, i.reason), h('td', {}, timeEl(i.opened_at, 'UTC', true)),
      h('td', {}, timeEl(i.resolved_at, 'UTC')),
      h('td', {}, i.acked_at ? [timeEl(i.acked_at, 'UTC'), ' by ' + i.acked_by, i.ack_note ? ': ' + i.ack_note : '']
        : i.status === 'OPEN' && can('operator') ? h('button', { type: 'button', onclick: () => ack(i) }, 'Acknowledge') : '—')))) : h('p', { class: 'empty' }, 'No incident.'),
    h('h2', {}, 'Alert rules'),
    rules.items.length ? table(['Rule', 'Applies to', 'Condition', 'Channels'], rules.items.map(r => h('tr', {},
      h('td', {}, r.name), h('td', {}, r.task || r.selector || (r.task_id ? 'task ' + r.task_id : '—')),
      h('td', {}, h('code', {}, JSON.stringify(r.condition))), h('td', {}, (r.channels || []).join(', '))))) : h('p', { class: 'empty' }, 'No alert rule: see docs/alerts.md.'));
}

// ack acknowledges an open incident, with an optional note: it then
// sends no repeat notification.
async function ack(i) {
  const note = h('input', { type: 'text', name: 'note', maxlength: 1000 });
  const ok = await dialog('Acknowledge incident #' + i.id, [
    h('p', {}, i.rule + ' on ' + i.task + ': no more repeat notifications; the resolved one is still sent.'),
    field('Note (optional: why, or what is being done)', note)],
  [{ label: 'Acknowledge', primary: true, onclick: () => api('POST', '/incidents/' + i.id + '/ack', note.value.trim() ? { note: note.value.trim() } : undefined) }]);
  if (ok) { toast('Acknowledged incident #' + i.id); window.dispatchEvent(new HashChangeEvent('hashchange')); }
}

export async function audit(main, _id, params) {
  const actor = h('input', { type: 'text', name: 'actor', value: params.get('actor') || '' });
  const action = h('input', { type: 'text', name: 'action', value: params.get('action') || '', placeholder: 'task.disable' });
  const taskId = h('input', { type: 'number', name: 'task_id', min: 1, value: params.get('task_id') || '' });
  const out = h('div');
  let cursors = [''], page = 0;
  const filters = () => ({ actor: actor.value.trim(), action: action.value.trim(), task_id: taskId.value.trim() });
  async function load() {
    try {
      const res = await api('GET', '/audit' + qs(Object.assign({ limit: 50, cursor: cursors[page] }, filters())));
      clear(out, res.items.length ? table(['When', 'Actor', 'Action', 'Target', 'Reason'], res.items.map(e => h('tr', {},
        h('td', {}, timeEl(e.at, 'UTC', true)), h('td', {}, e.actor), h('td', {}, h('code', {}, e.action)),
        h('td', {}, e.task_id ? h('a', { href: '#/tasks/' + e.task_id }, e.target) : e.target), h('td', {}, e.reason || '—')))) : h('p', { class: 'empty' }, 'Nothing recorded.'),
      h('div', { class: 'pager' },
        h('button', { type: 'button', disabled: page === 0, onclick: () => { page--; load(); } }, 'Previous page'),
        h('button', { type: 'button', disabled: !res.next_cursor, onclick: () => { cursors[page + 1] = res.next_cursor; page++; load(); } }, 'Next page')));
    } catch (e) { clear(out, errorBox(e)); }
  }
  clear(main, h('h1', {}, 'Audit log'),
    h('form', { class: 'filters', onsubmit: e => { e.preventDefault(); cursors = ['']; page = 0; history.replaceState(null, '', '#/audit' + qs(filters())); load(); } },
      field('Actor', actor), field('Action', action), field('Task id', taskId), h('button', { type: 'submit' }, 'Apply')), out);
  await load();
}

export async function tokens(main) {
  const out = h('div');
  async function load() {
    const res = await api('GET', '/tokens');
    clear(out, res.items.length ? table(['Name', 'Role', 'Created', 'By', 'Expires', ''], res.items.map(t => h('tr', {},
      h('td', {}, t.name), h('td', {}, t.role), h('td', {}, timeEl(t.created_at, 'UTC')), h('td', {}, t.created_by),
      h('td', {}, t.expires_at ? [timeEl(t.expires_at, 'UTC'), t.expired ? ' (expired)' : ''] : 'never'),
      h('td', {}, can('admin') ? h('button', { type: 'button', class: 'danger', onclick: () => revoke(t) }, 'Revoke') : null)))) : h('p', { class: 'empty' }, 'No token.'));
  }
  async function revoke(t) {
    const ok = await dialog('Revoke ' + t.name, h('p', {}, 'Every request with this token is refused at once, on every node.'),
      [{ label: 'Revoke', danger: true, onclick: () => api('DELETE', '/tokens/' + t.id) }]);
    if (ok !== null) { toast('Revoked ' + t.name); load(); }
  }
  const name = h('input', { type: 'text', name: 'name', required: true });
  const role = h('select', { name: 'role' }, ['viewer', 'operator', 'editor', 'admin'].map(r => h('option', { value: r }, r)));
  const expires = h('input', { type: 'text', name: 'expires_at', placeholder: '2027-01-01T00:00:00Z (optional)' });
  const made = h('div', { 'aria-live': 'polite' });
  const form = h('form', { class: 'filters', onsubmit: async e => {
    e.preventDefault();
    try {
      const body = { name: name.value.trim(), role: role.value };
      if (expires.value.trim()) body.expires_at = expires.value.trim();
      const t = await api('POST', '/tokens', body);
      const copy = () => navigator.clipboard.writeText(t.secret).then(() => toast('Copied the secret'), () => {
        getSelection().selectAllChildren(made.querySelector('code.secret'));
        toast('Selected the secret: copy it with Ctrl+C');
      });
      clear(made, h('p', { class: 'banner' }, 'Token ', h('strong', {}, t.name), ' made. Its secret is shown this once: ', h('code', { class: 'secret' }, t.secret),
        ' ', h('button', { type: 'button', onclick: copy }, 'Copy')));
      name.value = '';
      load();
    } catch (err) {
      if (showFieldError(form, err)) clear(made);
      else clear(made, errorBox(err));
    }
  } }, field('Name', name), field('Role', role), field('Expires at', expires), h('button', { type: 'submit', class: 'primary' }, 'Create token'));
  clear(main, h('h1', {}, 'API tokens'), out, h('h2', {}, 'New token'), form, made);
  await load();
}
