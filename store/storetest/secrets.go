package storetest

import (
	"fmt"
	"maps"
	"reflect"
	"testing"

	"github.com/sundialhq/sundial"
)

// The re-sealing of stored secrets with a new key (sundial secrets
// reseal): TaskSecretsList, TaskSecretsSwap, SettingList, SettingSwap.

// secretsOf is what TaskSecretsList should read of tk.
func secretsOf(tk *sundial.Task) *sundial.TaskSecrets {
	h := maps.Clone(tk.Headers)
	if h == nil {
		h = map[string]string{}
	}
	return &sundial.TaskSecrets{TaskID: tk.ID, TargetURL: tk.TargetURL, Headers: h, SigningSecret: tk.SigningSecret}
}

// resealed is ts with every secret column changed, as a re-sealing
// changes them.
func resealed(ts *sundial.TaskSecrets, tag string) *sundial.TaskSecrets {
	next := *ts
	next.TargetURL = "https://" + sundial.SealedPrefix + tag + "@example.com/hook"
	next.Headers = maps.Clone(ts.Headers)
	next.Headers["X-Token"] = sundial.SealedPrefix + tag
	next.SigningSecret = sundial.SealedPrefix + "signing-" + tag
	return &next
}

// secretTask creates a task at t0 with the signing secret secret, stored
// as given (sealing is the caller's).
func (f *fixture) secretTask(name, secret string, mods ...func(*sundial.Task)) *sundial.Task {
	f.t.Helper()
	tk := newTask(name, mods...)
	tk.SigningSecret = secret
	if err := CreateTask(f.ctx, f.s, tk, t0); err != nil {
		f.t.Fatalf("CreateTask %q: %v", name, err)
	}
	return tk
}

func (f *fixture) taskSecrets(afterID int64, limit int) []*sundial.TaskSecrets {
	f.t.Helper()
	out, err := f.s.TaskSecretsList(f.ctx, afterID, limit)
	if err != nil {
		f.t.Fatalf("TaskSecretsList(%d, %d): %v", afterID, limit, err)
	}
	return out
}

func (f *fixture) swapSecrets(old, next *sundial.TaskSecrets) bool {
	f.t.Helper()
	ok, err := f.s.TaskSecretsSwap(f.ctx, old, next)
	if err != nil {
		f.t.Fatalf("TaskSecretsSwap of task %d: %v", old.TaskID, err)
	}
	return ok
}

func fmtSecrets(ss []*sundial.TaskSecrets) string {
	out := "["
	for i, s := range ss {
		if i > 0 {
			out += " "
		}
		out += fmt.Sprintf("%+v", *s)
	}
	return out + "]"
}

func testTaskSecrets(t *testing.T, open Opener) {
	// Every task, live or deleted, whatever its status, is listed by ID,
	// a page at a time, its secret columns as stored.
	t.Run("List", func(t *testing.T) {
		t.Parallel()
		f := setup(t, open)
		live := f.secretTask("live", sundial.SealedPrefix+"c2lnbmluZw", func(tk *sundial.Task) {
			tk.TargetURL = "https://user:pass@example.com/hook"
		})
		disabled := f.task("disabled", func(tk *sundial.Task) { tk.Status = sundial.TaskDisabled })
		gone := f.task("gone", func(tk *sundial.Task) { tk.Headers = nil })
		if err := f.s.TaskDelete(f.ctx, gone.ID, at(1)); err != nil {
			t.Fatalf("TaskDelete: %v", err)
		}
		want := []*sundial.TaskSecrets{secretsOf(live), secretsOf(disabled), secretsOf(gone)}
		if got := f.taskSecrets(0, 1000); !reflect.DeepEqual(got, want) {
			t.Fatalf("TaskSecretsList = %s\nwant %s", fmtSecrets(got), fmtSecrets(want))
		}
		first := f.taskSecrets(0, 2)
		if !reflect.DeepEqual(first, want[:2]) {
			t.Fatalf("TaskSecretsList of 2 = %s, want %s", fmtSecrets(first), fmtSecrets(want[:2]))
		}
		if rest := f.taskSecrets(first[1].TaskID, 2); !reflect.DeepEqual(rest, want[2:]) {
			t.Fatalf("TaskSecretsList after %d = %s, want %s", first[1].TaskID, fmtSecrets(rest), fmtSecrets(want[2:]))
		}
		if none := f.taskSecrets(gone.ID, 10); len(none) != 0 {
			t.Fatalf("TaskSecretsList after the last task = %s, want none", fmtSecrets(none))
		}
	})

	// A swap changes the secret columns and nothing else: not the version,
	// not updated_at, not the task's planned runs, which a change of the
	// task (TaskUpdate) would take back.
	t.Run("Swap", func(t *testing.T) {
		t.Parallel()
		f := setup(t, open)
		tk := f.secretTask("a", sundial.SealedPrefix+"b2xk", withNext(at(60)), func(tk *sundial.Task) {
			tk.TargetURL = "https://user:pass@example.com/hook"
		})
		other := f.task("b")
		planned := f.run(tk.ID, at(10), sundial.RunScheduled)
		old := f.taskSecrets(0, 1)[0]
		next := resealed(old, "new")
		if !f.swapSecrets(old, next) {
			t.Fatal("TaskSecretsSwap with the values stored = false, want true")
		}
		want := *tk
		want.TargetURL, want.Headers, want.SigningSecret = next.TargetURL, next.Headers, next.SigningSecret
		eqTask(t, f.getTask(tk.ID), &want)
		eqTask(t, f.getTask(other.ID), other)
		eqRun(t, f.get(planned.ID), planned)
		if got := f.taskSecrets(0, 1)[0]; !reflect.DeepEqual(got, next) {
			t.Fatalf("TaskSecretsList after the swap = %+v, want %+v", *got, *next)
		}
		// The values read before are gone: a second swap from them does
		// nothing.
		if f.swapSecrets(old, resealed(old, "again")) {
			t.Fatal("a second TaskSecretsSwap from the same values = true, want false")
		}
		eqTask(t, f.getTask(tk.ID), &want)
		// A client's write based on its read before the swap is not
		// refused: the swap is not a change of the task.
		up := *tk
		up.Description = "edited"
		if err := f.s.TaskUpdate(f.ctx, &up, at(100)); err != nil {
			t.Fatalf("TaskUpdate after a swap, at the version read before it: %v", err)
		}
	})

	// A node's write of the task between the read and the swap wins: each
	// secret column, changed alone, makes the swap do nothing, and so does
	// a value that differs from the stored one only by a trailing space
	// or its case.
	t.Run("SwapStale", func(t *testing.T) {
		t.Parallel()
		f := setup(t, open)
		// In clear, as stored before sealing existed.
		tk := f.secretTask("a", sundial.GenerateSigningSecret(), func(tk *sundial.Task) {
			tk.TargetURL = "https://user:pass@example.com/hook"
		})
		read := f.taskSecrets(0, 1)[0]
		for _, tc := range []struct {
			name string
			mod  func(*sundial.TaskSecrets)
		}{
			{"target_url", func(s *sundial.TaskSecrets) { s.TargetURL = "https://user:other@example.com/hook" }},
			{"target_url with a trailing space", func(s *sundial.TaskSecrets) { s.TargetURL += " " }},
			{"a header", func(s *sundial.TaskSecrets) { s.Headers["X-Token"] = "changed" }},
			{"a header's case", func(s *sundial.TaskSecrets) { s.Headers["X-Token"] = "SECRET" }},
			{"one header more", func(s *sundial.TaskSecrets) { s.Headers["X-More"] = "1" }},
			{"one header less", func(s *sundial.TaskSecrets) { delete(s.Headers, "Content-Type") }},
			{"signing_secret", func(s *sundial.TaskSecrets) { s.SigningSecret = sundial.GenerateSigningSecret() }},
			{"signing_secret with a trailing space", func(s *sundial.TaskSecrets) { s.SigningSecret += " " }},
			{"signing_secret empty", func(s *sundial.TaskSecrets) { s.SigningSecret = "" }},
		} {
			stale := *read
			stale.Headers = maps.Clone(read.Headers)
			tc.mod(&stale)
			if f.swapSecrets(&stale, resealed(read, "x")) {
				t.Fatalf("TaskSecretsSwap from values with another %s = true, want false", tc.name)
			}
			eqTask(t, f.getTask(tk.ID), tk)
		}

		// A TaskUpdate after the read: the swap leaves the update alone.
		up := *tk
		up.Headers = map[string]string{"X-Token": "rotated", "Content-Type": "application/json"}
		if err := f.s.TaskUpdate(f.ctx, &up, at(5)); err != nil {
			t.Fatalf("TaskUpdate: %v", err)
		}
		if f.swapSecrets(read, resealed(read, "x")) {
			t.Fatal("TaskSecretsSwap after a TaskUpdate changed a header = true, want false")
		}
		eqTask(t, f.getTask(tk.ID), &up)
		// Read again, it applies.
		again := f.taskSecrets(0, 1)[0]
		if !f.swapSecrets(again, resealed(again, "y")) {
			t.Fatal("TaskSecretsSwap from the values read again = false, want true")
		}
	})

	// Empty values compare as values: a task without credentials or a
	// signing secret and without headers swaps.
	t.Run("SwapEmpty", func(t *testing.T) {
		t.Parallel()
		f := setup(t, open)
		f.task("bare", func(tk *sundial.Task) { tk.Headers = nil })
		old := f.taskSecrets(0, 1)[0]
		if old.SigningSecret != "" || len(old.Headers) != 0 {
			t.Fatalf("TaskSecretsList = %+v, want no signing secret and no headers", *old)
		}
		next := *old
		next.Headers = map[string]string{"Authorization": sundial.SealedPrefix + "YQ"}
		if !f.swapSecrets(old, &next) {
			t.Fatal("TaskSecretsSwap of empty values = false, want true")
		}
		if got := f.taskSecrets(0, 1)[0]; !reflect.DeepEqual(got, &next) {
			t.Fatalf("TaskSecretsList after the swap = %+v, want %+v", *got, next)
		}
	})

	// A deleted task's secrets are sealed again too; a task that does not
	// exist is false, not an error.
	t.Run("SwapDeletedAndMissing", func(t *testing.T) {
		t.Parallel()
		f := setup(t, open)
		gone := f.task("gone")
		if err := f.s.TaskDelete(f.ctx, gone.ID, at(1)); err != nil {
			t.Fatalf("TaskDelete: %v", err)
		}
		old := f.taskSecrets(0, 1)[0]
		next := resealed(old, "new")
		if !f.swapSecrets(old, next) {
			t.Fatal("TaskSecretsSwap of a deleted task = false, want true")
		}
		if got := f.taskSecrets(0, 1)[0]; !reflect.DeepEqual(got, next) {
			t.Fatalf("TaskSecretsList after the swap = %+v, want %+v", *got, *next)
		}
		if _, err := f.s.TaskGet(f.ctx, gone.ID); err == nil {
			t.Fatal("the swap brought the deleted task back")
		}
		missing := *next
		missing.TaskID = gone.ID + 1000
		if f.swapSecrets(&missing, resealed(&missing, "x")) {
			t.Fatal("TaskSecretsSwap of a task that does not exist = true, want false")
		}
	})
}

func testSettingSwap(t *testing.T, open Opener) {
	f := setup(t, open)
	for _, s := range []sundial.Setting{
		{Name: "oidc_signing_key", Value: "sealed:v1:a"},
		{Name: "oidc_signing_key_12", Value: "sealed:v1:b"},
		{Name: "oidc_signing_keyX", Value: "sealed:v1:c"},
		{Name: "OIDC_SIGNING_KEY_1", Value: "upper"},
		{Name: "callback_secret", Value: "cb"},
	} {
		if _, err := f.s.SettingEnsure(f.ctx, s.Name, s.Value); err != nil {
			t.Fatalf("SettingEnsure: %v", err)
		}
	}
	list := func(prefix string, want ...sundial.Setting) {
		t.Helper()
		got, err := f.s.SettingList(f.ctx, prefix)
		if err != nil || !reflect.DeepEqual(got, want) {
			t.Fatalf("SettingList(%q) = %v, %v; want %v", prefix, got, err, want)
		}
	}
	// By name (byte for byte: X before _), case-sensitive, "_" a
	// character and not a wildcard.
	list("oidc_signing_key_", sundial.Setting{Name: "oidc_signing_key_12", Value: "sealed:v1:b"})
	list("oidc_signing_key", sundial.Setting{Name: "oidc_signing_key", Value: "sealed:v1:a"},
		sundial.Setting{Name: "oidc_signing_keyX", Value: "sealed:v1:c"},
		sundial.Setting{Name: "oidc_signing_key_12", Value: "sealed:v1:b"})
	list("nothing")
	all, err := f.s.SettingList(f.ctx, "")
	if err != nil || len(all) != 5 {
		t.Fatalf("SettingList(\"\") = %v, %v; want the 5 settings", all, err)
	}
	for i := 1; i < len(all); i++ {
		if all[i-1].Name >= all[i].Name {
			t.Fatalf("SettingList(\"\") = %v, not by name", all)
		}
	}

	swap := func(name, old, next string, want bool) {
		t.Helper()
		if got, err := f.s.SettingSwap(f.ctx, name, old, next); err != nil || got != want {
			t.Fatalf("SettingSwap(%q, %q, %q) = %v, %v; want %v", name, old, next, got, err, want)
		}
	}
	get := func(name, want string) {
		t.Helper()
		if v, ok, err := f.s.SettingGet(f.ctx, name); err != nil || !ok || v != want {
			t.Fatalf("SettingGet(%q) = %q, %v, %v; want %q", name, v, ok, err, want)
		}
	}
	swap("oidc_signing_key", "sealed:v1:a", "sealed:v1:A", true)
	get("oidc_signing_key", "sealed:v1:A")
	get("oidc_signing_key_12", "sealed:v1:b")
	// From a value that is no longer stored, or differs by a trailing
	// space or its case: nothing.
	swap("oidc_signing_key", "sealed:v1:a", "sealed:v1:X", false)
	swap("oidc_signing_key", "sealed:v1:A ", "sealed:v1:X", false)
	swap("oidc_signing_key", "sealed:v1:a", "sealed:v1:X", false)
	get("oidc_signing_key", "sealed:v1:A")
	swap("no_such_setting", "", "x", false)
	if _, ok, _ := f.s.SettingGet(f.ctx, "no_such_setting"); ok {
		t.Fatal("SettingSwap of a missing setting stored it")
	}
}

func testClusterSecretsSwap(t *testing.T, b Backend) {
	// Swaps from the same read, on two stores at once: one applies, and
	// the stored values are its.
	c := setupCluster(t, b, 2)
	c.task("a")
	old := c.taskSecrets(0, 1)[0]
	if _, err := c.s.SettingEnsure(c.ctx, "oidc_signing_key", "sealed:v1:old"); err != nil {
		t.Fatalf("SettingEnsure: %v", err)
	}
	const n = 8
	tasks, settings := make([]bool, n), make([]bool, n)
	errs := make([]error, 2*n)
	race(n, func(i int) {
		tasks[i], errs[i] = c.node(i).TaskSecretsSwap(c.ctx, old, resealed(old, fmt.Sprint(i)))
		settings[i], errs[n+i] = c.node(i).SettingSwap(c.ctx, "oidc_signing_key", "sealed:v1:old", fmt.Sprintf("sealed:v1:%d", i))
	})
	for _, err := range errs {
		if err != nil {
			t.Fatalf("swap: %v", err)
		}
	}
	won := func(ok []bool) int {
		w := -1
		for i, o := range ok {
			if o {
				if w >= 0 {
					t.Fatalf("swaps %d and %d from the same values both applied", w, i)
				}
				w = i
			}
		}
		if w < 0 {
			t.Fatal("no swap applied")
		}
		return w
	}
	w := won(tasks)
	if got := c.taskSecrets(0, 1)[0]; !reflect.DeepEqual(got, resealed(old, fmt.Sprint(w))) {
		t.Fatalf("stored secrets = %+v, want swap %d's", *got, w)
	}
	w = won(settings)
	if v, _, err := c.s.SettingGet(c.ctx, "oidc_signing_key"); err != nil || v != fmt.Sprintf("sealed:v1:%d", w) {
		t.Fatalf("stored setting = %q, %v; want swap %d's", v, err, w)
	}
}
