package seal

import (
	"encoding/base64"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sundialhq/sundial"
)

func key(t *testing.T) []byte {
	k, err := ParseKey(NewKey())
	if err != nil {
		t.Fatal(err)
	}
	return k
}

// TestBoxRotation: a value sealed with the old key opens once the old key
// is a previous one; new values are sealed with the new key.
func TestBoxRotation(t *testing.T) {
	t.Parallel()
	oldKey, newKey := key(t), key(t)
	old, _ := New(oldKey)
	v, err := old.Seal("Bearer s3cr3t")
	if err != nil || !strings.HasPrefix(v, sundial.SealedPrefix) || strings.Contains(v, "s3cr3t") {
		t.Fatalf("Seal = %q, %v", v, err)
	}
	rotated, err := New(newKey, oldKey)
	if err != nil {
		t.Fatal(err)
	}
	if got, err := rotated.Open(v); err != nil || got != "Bearer s3cr3t" {
		t.Errorf("rotated Open(old) = %q, %v", got, err)
	}
	v2, _ := rotated.Seal("x")
	if _, err := old.Open(v2); err == nil {
		t.Error("the old key opens a value sealed after the rotation")
	}
	fresh, _ := New(newKey)
	if _, err := fresh.Open(v); err != ErrOpen {
		t.Errorf("Open without the old key: %v, want ErrOpen", err)
	}
	if a, _ := fresh.Seal("x"); a == v2 {
		t.Error("two seals of one value are equal: the nonce is not random")
	}
}

func TestParseKey(t *testing.T) {
	t.Parallel()
	for _, bad := range []string{"", "not base64!", base64.StdEncoding.EncodeToString(make([]byte, 16))} {
		if _, err := ParseKey(bad); err == nil {
			t.Errorf("ParseKey(%q) passes", bad)
		} else if bad != "" && strings.Contains(err.Error(), bad) {
			t.Errorf("the error %q holds the key", err)
		}
	}
	if _, err := ParseKey(" " + NewKey() + "\n"); err != nil {
		t.Errorf("a key with white space around: %v", err)
	}
}

// TestKeyFile: a key file is made once, mode 0600, and read back after.
func TestKeyFile(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "sundial.db.key")
	k1, err := LoadOrCreateKeyFile(path)
	if err != nil {
		t.Fatal(err)
	}
	st, err := os.Stat(path)
	if err != nil || st.Mode().Perm() != 0o600 {
		t.Fatalf("key file mode %v, %v; want 0600", st.Mode(), err)
	}
	k2, err := LoadOrCreateKeyFile(path)
	if err != nil || string(k1) != string(k2) {
		t.Errorf("the key changed when read again: %v", err)
	}
}

// TestReseal: a value sealed with the current key stays as it is; one
// sealed with a previous key, or stored in clear, comes back sealed with
// the current key alone; one no key opens is ErrOpen, and the value is in
// no error.
func TestReseal(t *testing.T) {
	t.Parallel()
	oldKey, newKey, otherKey := key(t), key(t), key(t)
	old, _ := New(oldKey)
	rotated, _ := New(newKey, oldKey)
	fresh, _ := New(newKey)
	other, _ := New(otherKey)

	current, _ := rotated.Seal("current")
	if got, changed, err := rotated.Reseal(current); err != nil || changed || got != current {
		t.Errorf("Reseal(sealed with the current key) = %q, %v, %v; want it as it is", got, changed, err)
	}

	byOld, _ := old.Seal("Bearer s3cr3t")
	got, changed, err := rotated.Reseal(byOld)
	if err != nil || !changed || got == byOld || !sundial.Sealed(got) || strings.Contains(got, "s3cr3t") {
		t.Fatalf("Reseal(sealed with the old key) = %q, %v, %v; want it sealed anew", got, changed, err)
	}
	if plain, err := fresh.Open(got); err != nil || plain != "Bearer s3cr3t" {
		t.Errorf("the new key alone opens the re-sealed value as %q, %v", plain, err)
	}
	if _, err := old.Open(got); err == nil {
		t.Error("the old key opens the re-sealed value")
	}
	if again, changed, err := rotated.Reseal(got); err != nil || changed || again != got {
		t.Errorf("Reseal of a re-sealed value = %q, %v, %v; want it as it is", again, changed, err)
	}

	for _, plain := range []string{"user:pa55", ""} {
		got, changed, err := rotated.Reseal(plain)
		if err != nil || !changed || !sundial.Sealed(got) {
			t.Fatalf("Reseal(%q in clear) = %q, %v, %v; want it sealed", plain, got, changed, err)
		}
		if open, err := fresh.Open(got); err != nil || open != plain {
			t.Errorf("Reseal(%q in clear) opens as %q, %v", plain, open, err)
		}
	}

	byOther, _ := other.Seal("unknown")
	if got, changed, err := rotated.Reseal(byOther); err != ErrOpen || changed || got != "" {
		t.Errorf("Reseal(sealed with no key of the box) = %q, %v, %v; want ErrOpen", got, changed, err)
	}
	for _, bad := range []string{sundial.SealedPrefix + "!!!", sundial.SealedPrefix + "c2hvcnQ"} {
		if got, changed, err := rotated.Reseal(bad); err == nil || changed || got != "" || strings.Contains(err.Error(), bad) {
			t.Errorf("Reseal(%q) = %q, %v, %v; want an error without the value", bad, got, changed, err)
		}
	}
}
