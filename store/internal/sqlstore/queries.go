package sqlstore

import (
	"strings"

	"github.com/sundialhq/sundial"
	"github.com/sundialhq/sundial/store/internal/sqlrow"
)

// Queries are the statements of the plain methods in one dialect: the
// fixed ones rendered once, the lists built per call from their filters.
// The adapters' query-plan tests read them.
type Queries struct {
	d Dialect

	TaskGet, TaskExists string
	RunGet              string
	// RunAttempts reads a run's attempts, oldest first: its rows of
	// run_attempts (a range of run_attempts_run), then its own attempt
	// when it has one (sundial.Run.OwnAttempt: attempt_on_run), read by
	// the primary key of runs. Arguments: the run's ID, twice.
	RunAttempts string
	// RunUpcoming reads a task's SCHEDULED runs never delivered, by
	// scheduled time: a range of runs_task_status, in its order.
	RunUpcoming string
	// RunQueuedNext reads a task's oldest QUEUED run from runs_task_status.
	RunQueuedNext string
	// RunsOwned reads a node's Held runs (sundial.RunStatus.Held), by
	// scheduled time.
	RunsOwned string
	// RunCancelRequested reads the IDs of a node's Active runs whose
	// cancellation was asked for: a range of the (status, node) prefix of
	// runs_claim (MySQL), runs_status_node (the others).
	RunCancelRequested string
	// RunFindStuck reads the SCHEDULED runs due before a time that the
	// node holds, that no node holds, or whose holder is not an ALIVE node
	// (LEFT, DEAD, or no row in nodes), oldest due first: a range of the
	// status prefix of runs_claim (MySQL), runs_status_node (the others);
	// the holder is looked up in nodes by primary key.
	RunFindStuck string
	// RunLongRunning reads the RUNNING runs started at or before a time,
	// longest running first: a range of the status prefix of runs_claim
	// (MySQL), runs_status_node (the others), as many rows as runs are
	// RUNNING in the cluster at most.
	RunLongRunning string
	NodeList       string
	NodeLeave      string
	// NodePrune deletes the gone nodes: a range of nodes_state_heartbeat
	// per state.
	NodePrune string
	// SettingGet reads a setting by its primary key.
	SettingGet string
	// TaskSecretsList reads the secret columns of the tasks, live or
	// deleted, after an ID: a range of the primary key.
	TaskSecretsList string
}

// NewQueries renders the statements of the plain methods in d.
func NewQueries(d Dialect) *Queries {
	q := &Queries{d: d}
	b := d.bind
	q.TaskGet = b(`SELECT ` + sqlrow.TaskCols + ` FROM tasks WHERE id = ? AND deleted = ` + d.False)
	q.TaskExists = b(`SELECT 1 FROM tasks WHERE id = ?`)
	q.SettingGet = b(`SELECT value FROM settings WHERE name = ?`)
	q.TaskSecretsList = b(`SELECT id, target_url, headers_json, signing_secret FROM tasks
		WHERE id > ? ORDER BY id LIMIT ?`)
	q.RunGet = b(`SELECT ` + sqlrow.RunCols + ` FROM runs WHERE id = ?`)
	q.RunAttempts = b(`SELECT ` + sqlrow.AttemptCols + ` FROM (
			SELECT 0 AS own, id AS n, ` + sqlrow.AttemptCols + ` FROM run_attempts WHERE run_id = ?
			UNION ALL
			SELECT 1, 0, ` + sqlrow.OwnAttemptCols + ` FROM runs WHERE id = ? AND attempt_on_run = ` + d.True + `
		) AS a
		ORDER BY own, n`)
	// Where a statement names an index (Hint), MySQL is held to it, so
	// that its plan does not hang on the table's statistics.
	q.RunUpcoming = b(`SELECT ` + sqlrow.RunCols + ` FROM runs` + d.hint("runs_task_status") + `
		WHERE task_id = ? AND status = 'SCHEDULED' AND deliveries = 0
		ORDER BY scheduled_at, id
		LIMIT ?`)
	q.RunQueuedNext = b(`SELECT ` + sqlrow.RunCols + ` FROM runs` + d.hint("runs_task_status") + `
		WHERE task_id = ? AND status = 'QUEUED' ORDER BY scheduled_at, id LIMIT 1`)
	q.RunsOwned = b(`SELECT ` + sqlrow.RunCols + ` FROM runs
		WHERE status IN ` + sqlrow.Statuses(sundial.RunStatus.Held) + ` AND node_id = ?
		ORDER BY scheduled_at, id`)
	q.RunCancelRequested = b(`SELECT id FROM runs` + d.hint("runs_claim") + `
		WHERE status IN ` + sqlrow.Statuses(sundial.RunStatus.Active) + ` AND node_id = ?
			AND cancel_requested = ` + d.True + `
		ORDER BY id`)
	q.RunFindStuck = b(`SELECT ` + sqlrow.RunCols + ` FROM runs AS r` + d.hint("runs_claim") + `
		WHERE r.status = 'SCHEDULED' AND r.due_at < ?
			AND (r.node_id = ? OR r.node_id = ''
				OR NOT EXISTS (SELECT 1 FROM nodes AS n WHERE n.id = r.node_id AND n.state = 'ALIVE'))
		ORDER BY r.due_at, r.id
		LIMIT ?`)
	q.RunLongRunning = b(`SELECT ` + sqlrow.RunCols + ` FROM runs` + d.hint("runs_claim") + `
		WHERE status = 'RUNNING' AND started_at <= ?
		ORDER BY started_at, id
		LIMIT ?`)
	q.NodeList = `SELECT id, host, pid, address, state, started_at, heartbeat_at
		FROM nodes ORDER BY started_at DESC, id DESC`
	q.NodeLeave = b(`UPDATE nodes SET state = 'LEFT' WHERE id = ?`)
	q.NodePrune = b(`DELETE FROM nodes WHERE state IN ('LEFT', 'DEAD') AND heartbeat_at < ?`)
	return q
}

// TaskList returns TaskList's statement for f, and its arguments: the live
// tasks after f.AfterID, by ID, each text filter matched as the dialect
// matches text exactly (Equal, HasPrefix) on the index of its column
// (tasks_name_live, tasks_request_live, tasks_biz).
func (q *Queries) TaskList(f sundial.TaskListParams) (string, []any) {
	var args []any
	arg := func(v any) string {
		args = append(args, v)
		return q.d.Placeholder(len(args))
	}
	where := []string{`deleted = ` + q.d.False, `id > ` + arg(f.AfterID)}
	if len(f.Status) > 0 {
		in := make([]string, len(f.Status))
		for i, st := range f.Status {
			in[i] = arg(string(st))
		}
		where = append(where, `status IN (`+strings.Join(in, ", ")+`)`)
	}
	for _, c := range [...]struct{ col, v string }{{"name", f.Name}, {"request_id", f.RequestID}, {"biz_id", f.BizID}} {
		if c.v != "" {
			where = append(where, q.equal(c.col, c.v, arg))
		}
	}
	if f.NamePrefix != "" {
		where = append(where, q.d.HasPrefix("name", f.NamePrefix, arg))
	}
	if f.NameContains != "" {
		where = append(where, q.d.Contains("name", f.NameContains, arg))
	}
	if f.HasParents {
		// The few tasks with parents: a range of tasks_children. Its own
		// condition is written out too: SQLite uses a partial index only
		// for a query whose terms include it, and without it read every
		// task in id order (a million tasks: a fifth of a core at idle).
		where = append(where, `join_mode IN ('all', 'any') AND join_mode <> ''`)
	}
	if len(f.Selector) > 0 {
		// No index holds labels: the live tasks are read in id order
		// (the primary key, from AfterID) until the page is full.
		where = append(where, selectorCond(f.Selector, func(key string) string { return q.d.Label("labels_json", key, arg) }, arg))
	}
	limit := arg(sqlrow.ClampLimit(f.Limit))
	from := `tasks`
	if f.HasParents {
		// MySQL's index holds every task (it has no partial index): held
		// to it, it reads the range of the few with parents rather than
		// the primary key in order.
		from += q.d.hint("tasks_children")
	}
	return `SELECT ` + sqlrow.TaskCols + ` FROM ` + from + ` WHERE ` + strings.Join(where, ` AND `) +
		` ORDER BY id LIMIT ` + limit, args
}

// equal is the dialect's Equal, or its default.
func (q *Queries) equal(col, v string, arg func(any) string) string {
	if q.d.Equal != nil {
		return q.d.Equal(col, v, arg)
	}
	return col + ` = ` + arg(v) + ` AND ` + col + ` <> ''`
}

// RunList returns RunList's statement for f, and its arguments.
//
// Without a task, MySQL is told to read the runs backwards from
// runs_scheduled, which holds them in RunList's order, until the page is
// full: its optimizer, seeing a filter it cannot turn into a range (the
// planned runs left out), would otherwise read the whole table and sort it
// for one page. A task's runs are found by ref of its task
// (runs_task_scheduled, in order, or runs_task_status for a status), never
// by a scan of the table.
func (q *Queries) RunList(f sundial.RunListParams) (string, []any) {
	where, args := runFilter(f, q.d.Placeholder, q.d.Label)
	s := `SELECT ` + sqlrow.RunCols + ` FROM runs`
	if f.TaskID == 0 {
		s += q.d.hint("runs_scheduled")
	}
	if where != "" {
		s += ` WHERE ` + where
	}
	args = append(args, sqlrow.ClampLimit(f.Limit))
	return s + ` ORDER BY ` + runListOrder + ` LIMIT ` + q.d.Placeholder(len(args)), args
}
