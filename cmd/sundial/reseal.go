package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"maps"
	"os"
	"slices"
	"strings"

	"github.com/sundialhq/sundial"
	"github.com/sundialhq/sundial/idtoken"
	"github.com/sundialhq/sundial/seal"
)

const secretsUsage = "sundial secrets reseal [flags]"

// runSecrets runs "sundial secrets SUBCOMMAND": reseal, for now.
func runSecrets(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) error {
	if len(args) == 0 {
		return usageErrorf("secrets: missing subcommand (usage: %s)", secretsUsage)
	}
	switch sub, rest := args[0], args[1:]; sub {
	case "reseal":
		return runReseal(ctx, rest, getenv, stdout, stderr)
	case "help", "-h", "-help", "--help":
		_, err := fmt.Fprintf(stdout, "usage:\n  %s\n", secretsUsage)
		return err
	default:
		return usageErrorf("secrets: unknown subcommand %q (usage: %s)", sub, secretsUsage)
	}
}

// runReseal seals every stored secret again with the current secrets key
// (see reseal), prints what it did, and fails when a value opened with
// none of the keys given or a task kept changing under it.
func runReseal(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) error {
	cfg, err := loadConfig("secrets reseal", args, getenv, stderr)
	if err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return nil
		}
		return err
	}
	box, err := resealBox(cfg)
	if err != nil {
		return err
	}
	// The schema is left as it is: a database that is not Sundial's, or
	// not at this version's schema, is refused, and a SQLite file that
	// does not exist is not made.
	store, err := openStoreAs(ctx, cfg.DB, newLogger(cfg.Log, stderr), true)
	if err != nil {
		return usageErrorf("db: %v", err)
	}
	if err := checkClusterKey(ctx, store, box); err != nil {
		store.Close()
		return err
	}
	rep, err := reseal(ctx, store, box)
	if cerr := store.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return err
	}
	_, err = io.WriteString(stdout, rep.String())
	if err != nil {
		return err
	}
	return rep.err()
}

// checkClusterKey refuses keys that do not open the cluster's OIDC signing
// key, when the database holds one (every database a node with a key has
// run on does), as serve does: sealing anything with keys that are not the
// cluster's would make it unreadable to the nodes.
func checkClusterKey(ctx context.Context, store sundial.Store, box *seal.Box) error {
	v, ok, err := store.SettingGet(ctx, idtoken.SettingName)
	if err != nil || !ok {
		return err
	}
	if _, err := box.Open(v); err != nil {
		return usageErrorf("the keys given do not open the cluster's OIDC signing key, which the first node with a secrets key " +
			"sealed: give the cluster's key as secrets.key (after a rotation, the new key) and the key it replaces in " +
			"secrets.previous_keys; nothing was changed")
	}
	return nil
}

// resealBox is the sealer of "sundial secrets reseal": the key of
// secrets.key or secrets.key_file (or SUNDIAL_SECRETS_KEY), or else a
// SQLite database's key file, opening also what secrets.previous_keys
// sealed. Unlike serve, it never makes a key: without one it refuses.
func resealBox(cfg *config) (*seal.Box, error) {
	key, previous, err := configuredKeys(cfg)
	if err != nil {
		return nil, usageErrorf("%v", err)
	}
	if key == nil {
		path, ok := sqliteKeyFile(cfg.DB.URL)
		if !ok {
			return nil, usageErrorf("no secrets key to seal with: set secrets.key, secrets.key_file or SUNDIAL_SECRETS_KEY " +
				"to the cluster's key (the new one, after a rotation) and the keys it replaces in secrets.previous_keys")
		}
		raw, err := os.ReadFile(path)
		if errors.Is(err, os.ErrNotExist) {
			return nil, usageErrorf("no secrets key to seal with: there is no key file %s beside the database, "+
				"and none of secrets.key, secrets.key_file or SUNDIAL_SECRETS_KEY is set", path)
		}
		if err != nil {
			return nil, fmt.Errorf("secrets key file %s: %w", path, err)
		}
		if key, err = seal.ParseKey(string(raw)); err != nil {
			return nil, fmt.Errorf("secrets key file %s: %w", path, err)
		}
	}
	return seal.New(key, previous...)
}

// resealPage is how many tasks reseal reads at a time.
const resealPage = 500

// resealAttempts bounds how often reseal reads a task again that a node
// wrote between its read and its swap.
const resealAttempts = 5

// resealReport is what reseal did. Values are counted once each, as the
// last attempt on their task found them.
type resealReport struct {
	resealed int // values sealed again with the current key
	clear    int // of them, values stored in clear before
	current  int // values already sealed with the current key
	tasks    int // tasks whose values were written
	channels int // alert channels whose values were written
	keys     int // OIDC signing keys written
	// unopened are the values no key opens, each as "task 7, the value of
	// header Authorization: why", never the value.
	unopened []string
	// busy are the tasks a node wrote between every read and swap.
	busy []int64
	// busyChannels are the alert channels changed between every read and
	// swap.
	busyChannels []string
}

// reseal seals every secret stored in the database with box's current
// key: the secrets of every task, live or deleted (sundial.TaskSecrets:
// the values of sensitive headers; the userinfo of target_url; signing_secret), the secrets of
// every alert channel (a webhook's signing_secret, a Slack channel's url, an SMTP password), and the
// cluster's OIDC signing keys (idtoken.SettingName and its per-period rows). A value
// sealed with the current key stays as it is; one sealed with a previous
// key is opened and sealed again; one stored in clear (before sealing
// existed) is sealed; one no key opens is reported and left as it is.
//
// Nodes may serve meanwhile. Each task is written with a swap that applies
// only if its secret columns still hold what was read (each channel only
// if its version is still the one read, each setting only if it holds
// what was read), so that a write in between is never lost: the task is
// read again and sealed anew, up to resealAttempts times. A swap changes
// neither the task's (or channel's) version nor anything else about it.
// Running it again writes nothing.
func reseal(ctx context.Context, store sundial.Store, box *seal.Box) (*resealReport, error) {
	rep := &resealReport{}
	var after int64
	for {
		page, err := store.TaskSecretsList(ctx, after, resealPage)
		if err != nil {
			return nil, err
		}
		if len(page) == 0 {
			break
		}
		for _, ts := range page {
			if err := rep.task(ctx, store, box, ts); err != nil {
				return nil, err
			}
		}
		after = page[len(page)-1].TaskID
	}
	channels, err := store.AlertChannelList(ctx)
	if err != nil {
		return nil, err
	}
	for _, c := range channels {
		if err := rep.channel(ctx, store, box, c); err != nil {
			return nil, err
		}
	}
	settings, err := store.SettingList(ctx, idtoken.SettingName)
	if err != nil {
		return nil, err
	}
	for _, s := range settings {
		if s.Name != idtoken.SettingName && !strings.HasPrefix(s.Name, idtoken.SettingName+"_") {
			continue
		}
		if err := rep.setting(ctx, store, box, s); err != nil {
			return nil, err
		}
	}
	return rep, nil
}

// resealed is what resealing one task or setting found.
type resealed struct {
	resealed, clear, current int
	unopened                 []string
}

// value reseals one secret value v, named what (for a report), and returns
// what is to be stored: v itself when it stays.
func (r *resealed) value(box *seal.Box, what, v string) (string, error) {
	out, changed, err := box.Reseal(v)
	switch {
	case err != nil && sundial.Sealed(v):
		r.unopened = append(r.unopened, fmt.Sprintf("%s: %v", what, err))
		return v, nil
	case err != nil:
		return "", fmt.Errorf("%s: seal: %w", what, err)
	case !changed:
		r.current++
	case sundial.Sealed(v):
		r.resealed++
	default:
		r.resealed++
		r.clear++
	}
	return out, nil
}

// resealTask returns ts with its secrets resealed: a copy, with its own
// headers.
func resealTask(box *seal.Box, ts *sundial.TaskSecrets) (*sundial.TaskSecrets, *resealed, error) {
	r := &resealed{}
	next := *ts
	next.Headers = maps.Clone(ts.Headers)
	var err error
	// In order, for the order of the report.
	for _, k := range slices.Sorted(maps.Keys(ts.Headers)) {
		v := ts.Headers[k]
		if !sundial.SensitiveHeader(k) {
			continue // no secret: never sealed, never opened (sundial.OpenTask)
		}
		if next.Headers[k], err = r.value(box, fmt.Sprintf("task %d, the value of header %s", ts.TaskID, k), v); err != nil {
			return nil, nil, err
		}
	}
	if scheme, ui, rest, ok := sundial.SplitUserinfo(ts.TargetURL); ok {
		v, err := r.value(box, fmt.Sprintf("task %d, the userinfo of target_url", ts.TaskID), ui)
		if err != nil {
			return nil, nil, err
		}
		next.TargetURL = scheme + v + "@" + rest
	}
	if ts.SigningSecret != "" {
		if next.SigningSecret, err = r.value(box, fmt.Sprintf("task %d, signing_secret", ts.TaskID), ts.SigningSecret); err != nil {
			return nil, nil, err
		}
	}
	return &next, r, nil
}

// task reseals one task's secrets, reading it again when a node wrote it
// meanwhile.
func (rep *resealReport) task(ctx context.Context, store sundial.Store, box *seal.Box, ts *sundial.TaskSecrets) error {
	for range resealAttempts {
		next, r, err := resealTask(box, ts)
		if err != nil {
			return err
		}
		swapped := r.resealed == 0
		if !swapped {
			if swapped, err = store.TaskSecretsSwap(ctx, ts, next); err != nil {
				return fmt.Errorf("task %d: %w", ts.TaskID, err)
			}
		}
		if swapped {
			rep.add(r)
			if r.resealed > 0 {
				rep.tasks++
			}
			return nil
		}
		// A node wrote the task since it was read: read it again.
		again, err := store.TaskSecretsList(ctx, ts.TaskID-1, 1)
		if err != nil {
			return err
		}
		if len(again) == 0 || again[0].TaskID != ts.TaskID {
			return nil // gone (tasks are only marked deleted: not expected)
		}
		ts = again[0]
	}
	rep.busy = append(rep.busy, ts.TaskID)
	return nil
}

// channel reseals one alert channel's secrets, reading it again when it
// changed meanwhile.
func (rep *resealReport) channel(ctx context.Context, store sundial.Store, box *seal.Box, c *sundial.AlertChannel) error {
	for range resealAttempts {
		r := &resealed{}
		next, err := sundial.ResealChannel(c, func(field, v string) (string, error) {
			return r.value(box, fmt.Sprintf("alert channel %s, %s", c.Name, field), v)
		})
		if err != nil {
			return err
		}
		swapped := r.resealed == 0
		if !swapped {
			if swapped, err = store.AlertChannelSecretsSwap(ctx, next); err != nil {
				return fmt.Errorf("alert channel %s: %w", c.Name, err)
			}
		}
		if swapped {
			rep.add(r)
			if r.resealed > 0 {
				rep.channels++
			}
			return nil
		}
		// Changed (or deleted) since it was read: read it again.
		if c, err = store.AlertChannelGet(ctx, c.ID); sundial.ErrorCode(err) == sundial.ENotFound {
			return nil
		} else if err != nil {
			return err
		}
	}
	rep.busyChannels = append(rep.busyChannels, c.Name)
	return nil
}

// setting reseals one sealed setting (an OIDC signing key), reading it
// again when a node wrote it meanwhile.
func (rep *resealReport) setting(ctx context.Context, store sundial.Store, box *seal.Box, s sundial.Setting) error {
	for range resealAttempts {
		r := &resealed{}
		next, err := r.value(box, "the OIDC signing key in setting "+s.Name, s.Value)
		if err != nil {
			return err
		}
		swapped := r.resealed == 0
		if !swapped {
			if swapped, err = store.SettingSwap(ctx, s.Name, s.Value, next); err != nil {
				return fmt.Errorf("setting %s: %w", s.Name, err)
			}
		}
		if swapped {
			rep.add(r)
			if r.resealed > 0 {
				rep.keys++
			}
			return nil
		}
		v, ok, err := store.SettingGet(ctx, s.Name)
		if err != nil {
			return err
		}
		if !ok {
			return nil
		}
		s.Value = v
	}
	return fmt.Errorf("the OIDC signing key in setting %s changed on each of %d attempts to seal it again; run the command again",
		s.Name, resealAttempts)
}

func (rep *resealReport) add(r *resealed) {
	rep.resealed += r.resealed
	rep.clear += r.clear
	rep.current += r.current
	rep.unopened = append(rep.unopened, r.unopened...)
}

// String is the report: a line for each value no key opened, then the
// summary.
func (rep *resealReport) String() string {
	var b strings.Builder
	for _, u := range rep.unopened {
		fmt.Fprintf(&b, "%s; left as it is\n", u)
	}
	for _, id := range rep.busy {
		fmt.Fprintf(&b, "task %d changed on each of %d attempts to seal it again; left as it is\n", id, resealAttempts)
	}
	for _, name := range rep.busyChannels {
		fmt.Fprintf(&b, "alert channel %s changed on each of %d attempts to seal it again; left as it is\n", name, resealAttempts)
	}
	already := fmt.Sprintf("%s %s already sealed with the current key", countOf(rep.current, "value"), were(rep.current))
	if rep.resealed == 0 {
		fmt.Fprintf(&b, "nothing to re-seal; %s\n", already)
		return b.String()
	}
	fmt.Fprintf(&b, "re-sealed %s", countOf(rep.resealed, "value"))
	if rep.clear > 0 {
		fmt.Fprintf(&b, " (%d of them stored in clear)", rep.clear)
	}
	fmt.Fprintf(&b, " in %s, %s and %s; %s\n", countOf(rep.tasks, "task"), countOf(rep.channels, "alert channel"),
		countOf(rep.keys, "signing key"), already)
	return b.String()
}

// err is the failure of a run that left values as they were, or nil.
func (rep *resealReport) err() error {
	var parts []string
	if n := len(rep.unopened); n > 0 {
		parts = append(parts, fmt.Sprintf("%s %s with none of the keys given: add the key that sealed %s to "+
			"secrets.previous_keys and run the command again, or give those secrets anew",
			countOf(n, "value"), pick(n, "opens", "open"), pick(n, "it", "them")))
	}
	if n := len(rep.busy); n > 0 {
		parts = append(parts, fmt.Sprintf("%s kept changing: run the command again", countOf(n, "task")))
	}
	if n := len(rep.busyChannels); n > 0 {
		parts = append(parts, fmt.Sprintf("%s kept changing: run the command again", countOf(n, "alert channel")))
	}
	if len(parts) == 0 {
		return nil
	}
	return errors.New(strings.Join(parts, "; "))
}

// countOf is n and the noun, plural unless n is 1.
func countOf(n int, noun string) string {
	return fmt.Sprintf("%d %s", n, pick(n, noun, noun+"s"))
}

func were(n int) string { return pick(n, "was", "were") }

func pick(n int, one, other string) string {
	if n == 1 {
		return one
	}
	return other
}
