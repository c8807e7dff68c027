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
