package sundial

import (
	"encoding/json"
	"fmt"
	"slices"
	"sort"
	"strings"
	"time"
)

// Dependencies: a task may name parents (DependsOn), other tasks by name,
// and fire once per fire of its parents (see docs/dependencies.md). The
// parents' runs are lined up by their logical time, the scheduled second
// of each parent's run (LogicalTime): a child waits for its parents' runs
// of the same logical time, joined all or any (Join), up to its join
// deadline. The wait is a join (DepJoin), one row per (child, logical
// time) that the store locks: each parent run that ends is recorded on it
// (Store.DepRecord), and the rule DecideJoin says, under that lock,
// whether the child fires (a run with trigger DEPENDENCY and the fire key
// DependencyFireKey of the logical time, unique per task like every fire
// key), is skipped (a SKIPPED run, reason UPSTREAM), or waits. So a child
// fires at most once per logical time whichever nodes its parents end on.

// DependOn says which outcome of a parent a child waits for.
type DependOn string

const (
	// DependSuccess: the parent's run ended SUCCESS.
	DependSuccess DependOn = "success"
	// DependFailure: the parent's run ended any other way (FAILED,
	// TIMEOUT, FAILED_TIMEOUT, CANCELED, SKIPPED): it did not succeed.
	DependFailure DependOn = "failure"
	// DependCompletion: the parent's run ended, whatever its outcome.
	DependCompletion DependOn = "completion"
)

// Matches reports whether a parent run that ended with status is the
// outcome on waits for.
func (on DependOn) Matches(status RunStatus) bool {
	switch on {
	case DependSuccess:
		return status == RunSuccess
	case DependFailure:
		return status.Final() && status != RunSuccess
	case DependCompletion:
		return status.Final()
	}
	return false
}

// JoinMode says how many of a child's parents must end as it waits for.
type JoinMode string

const (
	JoinAll JoinMode = "all" // every parent (the default)
	JoinAny JoinMode = "any" // the first one
)

// Dependency is one parent of a task.
type Dependency struct {
	Task string   `json:"task"` // the parent's name
	On   DependOn `json:"on"`   // "" is read as success
}

// Limits on dependencies.
const (
	MaxParents = 32
	// DefaultJoinDeadline is how long, in seconds, a child waits for the
	// rest of its parents' runs of one logical time after the first one
	// ended, when join_deadline_seconds is 0: one hour.
	DefaultJoinDeadline = 3600
	MaxJoinDeadline     = 7 * 24 * 3600
)

// TriggerDependency marks the run of a child made when its parents' runs
// of one logical time ended as it waits for (see DecideJoin).
const TriggerDependency Trigger = "DEPENDENCY"

// SkipUpstream is the skip reason of a child's fire that will not run:
// a parent ended otherwise than the child waits for, or the join deadline
// passed before every parent ended (the run's error says which).
const SkipUpstream SkipReason = "UPSTREAM"

// DependencyFireKey is the fire key of a child's run for its parents'
// runs of logical time at: its Unix second, apart from the scheduled
// (ScheduledFireKey) and backfilled (BackfillFireKey) fires of the same
// task.
func DependencyFireKey(at time.Time) string { return fmt.Sprintf("d:%d", at.Unix()) }

// LogicalTime is the logical time of a run, by which a child lines up
// its parents' runs: the second of its scheduled time. A child's own
// run is scheduled at its parents' logical time, so a chain keeps it.
func LogicalTime(r *Run) time.Time { return r.ScheduledTime.UTC().Truncate(time.Second) }

// HasParents reports whether the task depends on other tasks.
func (t *Task) HasParents() bool { return len(t.DependsOn) > 0 }

// JoinDeadlineOf is how long the task waits, after the first of its
// parents' runs of a logical time ended, for the others.
func (t *Task) JoinDeadlineOf() time.Duration {
	if t.JoinDeadline > 0 {
		return time.Duration(t.JoinDeadline) * time.Second
	}
	return DefaultJoinDeadline * time.Second
}

// Dependency returns the task's dependency on the parent named name.
func (t *Task) Dependency(name string) (Dependency, bool) {
	for _, d := range t.DependsOn {
		if d.Task == name {
			return d, true
		}
	}
	return Dependency{}, false
}

// normalizeDeps fills the defaults of the task's dependencies. A task
// without parents has no join: join and join_deadline_seconds given
// without depends_on are dropped (so that a patch removing depends_on
// needs not remove them too).
func (t *Task) normalizeDeps() {
	if len(t.DependsOn) == 0 {
		t.DependsOn, t.Join, t.JoinDeadline = nil, "", 0
		return
	}
	for i := range t.DependsOn {
		t.DependsOn[i].Task = strings.TrimSpace(t.DependsOn[i].Task)
		t.DependsOn[i].On = DependOn(strings.ToLower(string(t.DependsOn[i].On)))
		if t.DependsOn[i].On == "" {
			t.DependsOn[i].On = DependSuccess
		}
	}
	t.Join = JoinMode(strings.ToLower(string(t.Join)))
	if t.Join == "" {
		t.Join = JoinAll
	}
}

// validateDeps checks the task's own dependencies: names, outcomes, the
// join, the deadline, no parent twice and not itself. Whether the parents
// exist and form no cycle is CheckDependencies', which sees every task.
func (t *Task) validateDeps() error {
	if len(t.DependsOn) == 0 {
		return nil
	}
	if len(t.DependsOn) > MaxParents {
		return Errorf(EInvalid, "depends_on", "depends_on names more than %d parents", MaxParents)
	}
	seen := map[string]bool{}
	for i, d := range t.DependsOn {
		field := fmt.Sprintf("depends_on[%d]", i)
		switch {
		case d.Task == "":
			return Errorf(EInvalid, field+".task", "%s.task is required: the name of a parent task", field)
		case d.Task == t.Name:
			return &Error{Code: EInvalid, Field: field + ".task", Token: d.Task,
				Message: fmt.Sprintf("depends_on: a task cannot depend on itself (%q)", d.Task)}
		case seen[d.Task]:
			return &Error{Code: EInvalid, Field: field + ".task", Token: d.Task,
				Message: fmt.Sprintf("depends_on names %q twice", d.Task)}
		}
		seen[d.Task] = true
		switch d.On {
		case DependSuccess, DependFailure, DependCompletion:
		default:
			return enumErr(field+".on", string(d.On), "success", "failure", "completion")
		}
	}
	switch t.Join {
	case JoinAll, JoinAny:
	default:
		return enumErr("join", string(t.Join), "all", "any")
	}
	if t.JoinDeadline < 0 || t.JoinDeadline > MaxJoinDeadline {
		return &Error{Code: EInvalid, Field: "join_deadline_seconds", Token: fmt.Sprint(t.JoinDeadline),
			Message: fmt.Sprintf("join_deadline_seconds must be from 1 to %d, or 0 for %d", MaxJoinDeadline, DefaultJoinDeadline)}
	}
	return nil
}

// CheckDependencies checks the parents of t, a task about to be created
// or to replace the task of its name, against the live tasks that have
// parents (others: each one's name and parents) and the names of every
// live task (exists): every parent exists, and the graph has no cycle
// through t. A cycle is EInvalid naming it: "depends_on: cycle a -> b ->
// a".
func CheckDependencies(t *Task, others []*Task, exists func(name string) bool) error {
	for i, d := range t.DependsOn {
		if !exists(d.Task) {
			return &Error{Code: EInvalid, Field: fmt.Sprintf("depends_on[%d].task", i), Token: d.Task,
				Message: fmt.Sprintf("depends_on: no task is named %q", d.Task)}
		}
	}
	parents := map[string][]string{}
	for _, o := range others {
		for _, d := range o.DependsOn {
			parents[o.Name] = append(parents[o.Name], d.Task)
		}
	}
	parents[t.Name] = nil
	for _, d := range t.DependsOn {
		parents[t.Name] = append(parents[t.Name], d.Task)
	}
	// A cycle through t: a path from one of t's parents back to t.
	seen := map[string]bool{}
	var path []string
	var walk func(name string) bool
	walk = func(name string) bool {
		if name == t.Name {
			return true
		}
		if seen[name] {
			return false
		}
		seen[name] = true
		path = append(path, name)
		for _, p := range parents[name] {
			if walk(p) {
				return true
			}
		}
		path = path[:len(path)-1]
		return false
	}
	for _, d := range t.DependsOn {
		path = path[:0]
		if walk(d.Task) {
			// t depends on path[0], which depends on ... on t: written
			// child to parent.
			cycle := append(append([]string{t.Name}, path...), t.Name)
			return &Error{Code: EInvalid, Field: "depends_on", Token: d.Task,
				Message: "depends_on: cycle " + strings.Join(cycle, " -> ")}
		}
	}
	return nil
}

// ChildrenOf returns the names of the tasks of ts that depend on the task
// named name, sorted.
func ChildrenOf(name string, ts []*Task) []string {
	var out []string
	for _, t := range ts {
		if _, ok := t.Dependency(name); ok {
			out = append(out, t.Name)
		}
	}
	sort.Strings(out)
	return out
}

// JoinState is where a join stands.
type JoinState string

const (
	JoinWaiting JoinState = "WAITING" // for more parents
	JoinFired   JoinState = "FIRED"   // the child's run was made
	JoinSkipped JoinState = "SKIPPED" // the child's fire was recorded SKIPPED
)

// DepJoin is a child's wait for its parents' runs of one logical time.
type DepJoin struct {
	ChildID     int64     `json:"child_id"`
	LogicalTime time.Time `json:"logical_time"`
	State       JoinState `json:"state"`
	// DeadlineAt is when a join still WAITING is skipped: the child's
	// join deadline after the first parent's run was recorded.
	DeadlineAt time.Time `json:"deadline_at"`
	// Parents are the parents' runs recorded, in the order they came.
	Parents []ParentOutcome `json:"parents"`
	// RunID is the child's run (FIRED or SKIPPED); 0 while WAITING.
	RunID     int64     `json:"run_id,omitempty"`
	CreatedAt time.Time `json:"created_at"`
	UpdatedAt time.Time `json:"updated_at"`
}

// ParentOutcome is how one parent's run of a join's logical time ended.
type ParentOutcome struct {
	Task       string          `json:"task"` // the parent's name
	TaskID     int64           `json:"task_id"`
	RunID      int64           `json:"run_id"`
	Status     RunStatus       `json:"status"`
	Result     json.RawMessage `json:"result,omitempty"` // an ASYNC run's callback result
	FinishedAt time.Time       `json:"finished_at"`
}

// Parent returns the join's outcome of the parent named name.
func (j *DepJoin) Parent(name string) (ParentOutcome, bool) {
	for _, p := range j.Parents {
		if p.Task == name {
			return p, true
		}
	}
	return ParentOutcome{}, false
}

// ParentOutcomeOf is the outcome of the parent run r of task t, which
// ended. Its result is the run's callback result (an ASYNC run), or else
// the response body the run kept when that is JSON (a SYNC run), or none.
func ParentOutcomeOf(t *Task, r *Run) ParentOutcome {
	p := ParentOutcome{Task: t.Name, TaskID: t.ID, RunID: r.ID, Status: r.Status, Result: r.Result}
	if len(p.Result) == 0 && r.ResponseBody != "" && json.Valid([]byte(r.ResponseBody)) {
		p.Result = json.RawMessage(r.ResponseBody)
	}
	if r.FinishedAt != nil {
		p.FinishedAt = r.FinishedAt.UTC()
	} else {
		p.FinishedAt = r.UpdatedAt.UTC()
	}
	return p
}

// DepRecordParams is one parent run's outcome, for one child
// (Store.DepRecord).
type DepRecordParams struct {
	ChildID     int64
	LogicalTime time.Time
	Parent      ParentOutcome
}

// JoinFunc is the rule of a join (DecideJoin), called by the store with
// the child as stored (nil when it was deleted), the join as stored (a
// new one is WAITING with no parents and a zero DeadlineAt), and the
// parent's outcome to record (nil for the deadline pass). It changes j
// and reports whether to write it back, and returns the child's run to
// insert when the join resolves.
type JoinFunc func(child *Task, j *DepJoin, p *ParentOutcome, now time.Time) (run *Run, changed bool)

// DecideJoin is the rule of a join: see JoinFunc.
//
//   - A join that is not WAITING is left alone: a child fires once per
//     logical time, and the first run of each parent that ends counts.
//   - A parent the child no longer depends on, or whose run ended before
//     the child was created, is not recorded.
//   - join all: the child fires once every parent ended as it waits for,
//     and is skipped (UPSTREAM) as soon as one ended otherwise.
//   - join any: the child fires as soon as one parent ended as it waits
//     for, and is skipped once every parent ended otherwise.
//   - At the deadline (p nil, now at or after DeadlineAt), a join still
//     WAITING is skipped (UPSTREAM), naming the parents it waited for.
//   - A child that was deleted records nothing more; one that is not
//     ENABLED is skipped (DISABLED) instead of fired.
func DecideJoin(child *Task, j *DepJoin, p *ParentOutcome, now time.Time) (*Run, bool) {
	if j.State != "" && j.State != JoinWaiting {
		return nil, false
	}
	j.State = JoinWaiting
	if child == nil {
		return nil, false
	}
	changed := false
	if p != nil {
		_, wanted := child.Dependency(p.Task)
		_, had := j.Parent(p.Task)
		if !wanted || had || p.FinishedAt.Before(child.CreatedAt) {
			return nil, false
		}
		j.Parents = append(j.Parents, *p)
		if j.DeadlineAt.IsZero() {
			j.DeadlineAt = now.Add(child.JoinDeadlineOf()).UTC()
		}
		changed = true
	}
	fire, skip := joinVerdict(child, j)
	if !fire && skip == "" && p == nil && len(j.Parents) > 0 && !now.Before(j.DeadlineAt) {
		var missing []string
		for _, d := range child.DependsOn {
			if _, ok := j.Parent(d.Task); !ok {
				missing = append(missing, d.Task)
			}
		}
		skip = fmt.Sprintf("the join deadline (%s) passed waiting for %s", child.JoinDeadlineOf(), strings.Join(missing, ", "))
	}
	if !fire && skip == "" {
		return nil, changed
	}
	r := &Run{
		TaskID:        child.ID,
		FireKey:       DependencyFireKey(j.LogicalTime),
		Trigger:       TriggerDependency,
		ScheduledTime: j.LogicalTime.UTC(),
		DueAt:         now.UTC(),
		Status:        RunScheduled,
		Attempt:       1,
		Fence:         1,
		Priority:      child.Priority,
		CreatedAt:     now,
		UpdatedAt:     now,
	}
	j.State = JoinFired
	switch {
	case fire && child.Status != TaskEnabled:
		r.Status, r.SkipReason, r.Error = RunSkipped, SkipDisabled, "task not enabled when its parents ended"
		j.State = JoinSkipped
	case !fire:
		r.Status, r.SkipReason, r.Error = RunSkipped, SkipUpstream, skip
		j.State = JoinSkipped
	}
	if r.Status == RunSkipped {
		at := now
		r.FinishedAt = &at
	}
	return r, true
}

// joinVerdict says whether the parents recorded on j fire the child, or
// skip it (the reason), or neither yet.
func joinVerdict(child *Task, j *DepJoin) (fire bool, skip string) {
	ended, matched := 0, 0
	var wrong []string
	for _, d := range child.DependsOn {
		p, ok := j.Parent(d.Task)
		if !ok {
			continue
		}
		ended++
		if d.On.Matches(p.Status) {
			matched++
		} else {
			wrong = append(wrong, fmt.Sprintf("%s ended %s (waited for %s)", d.Task, p.Status, d.On))
		}
	}
	if child.Join == JoinAny {
		switch {
		case matched > 0:
			return true, ""
		case ended == len(child.DependsOn):
			return false, "no parent ended as awaited: " + strings.Join(wrong, "; ")
		}
		return false, ""
	}
	switch {
	case len(wrong) > 0:
		return false, "parent " + strings.Join(wrong, "; ")
	case matched == len(child.DependsOn):
		return true, ""
	}
	return false, ""
}

// ParentVars are the template variables of a child's run about its
// parents (parents.NAME.run_id, .status, .result), from its join: every
// parent of child has the three, empty ("" and null) for one that has no
// run in the join (a run of the child's schedule, a manual one, a parent
// that had not ended under join any).
func ParentVars(child *Task, j *DepJoin) map[string]string {
	if !child.HasParents() {
		return nil
	}
	vars := make(map[string]string, 3*len(child.DependsOn))
	for _, d := range child.DependsOn {
		id, status, result := "", "", "null"
		if j != nil {
			if p, ok := j.Parent(d.Task); ok {
				id, status = fmt.Sprint(p.RunID), string(p.Status)
				if len(p.Result) > 0 {
					result = string(p.Result)
				}
			}
		}
		prefix := "parents." + d.Task + "."
		vars[prefix+"run_id"], vars[prefix+"status"], vars[prefix+"result"] = id, status, result
	}
	return vars
}

// ParentVarNames are the names of the template variables ParentVars
// gives child.
func ParentVarNames(child *Task) []string {
	var out []string
	for _, d := range child.DependsOn {
		for _, v := range []string{"run_id", "status", "result"} {
			out = append(out, "parents."+d.Task+"."+v)
		}
	}
	return slices.Clip(out)
}
