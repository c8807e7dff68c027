// Package seal holds the secrets key and seals values with it: AES-256-GCM,
// a random nonce per value, written as "sealed:v1:" and the base64 (URL
// alphabet, unpadded) of nonce and ciphertext. It implements
// sundial.Sealer. Previous keys open what they sealed, so the key can be
// rotated: seal with the new key, keep the old ones for reading.
package seal

import (
	"crypto/aes"
	"crypto/cipher"
	"crypto/rand"
	"encoding/base64"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/sundialhq/sundial"
)

// KeySize is the length of a secrets key: 32 bytes, AES-256.
const KeySize = 32

// Box seals with its first key and opens with any of its keys. It is safe
// for concurrent use.
type Box struct {
	aeads []cipher.AEAD
}

// New returns a Box that seals with key and opens with key and previous.
func New(key []byte, previous ...[]byte) (*Box, error) {
	b := &Box{}
	for i, k := range append([][]byte{key}, previous...) {
		if len(k) != KeySize {
			return nil, fmt.Errorf("secrets key %d is %d bytes; a key is %d bytes", i+1, len(k), KeySize)
		}
		block, err := aes.NewCipher(k)
		if err != nil {
			return nil, err
		}
		aead, err := cipher.NewGCM(block)
		if err != nil {
			return nil, err
		}
		b.aeads = append(b.aeads, aead)
	}
	return b, nil
}

// ParseKey decodes a key written in base64 (standard or URL alphabet,
// padded or not). The error never holds the key.
func ParseKey(s string) ([]byte, error) {
	s = strings.TrimSpace(s)
	for _, enc := range []*base64.Encoding{base64.StdEncoding, base64.RawStdEncoding, base64.URLEncoding, base64.RawURLEncoding} {
		if k, err := enc.DecodeString(s); err == nil {
			if len(k) != KeySize {
				return nil, fmt.Errorf("the key is %d bytes; a key is %d bytes in base64 (openssl rand -base64 32)", len(k), KeySize)
			}
			return k, nil
		}
	}
	return nil, errors.New("the key is not base64; a key is 32 bytes in base64 (openssl rand -base64 32)")
}

// NewKey returns a random key in base64.
func NewKey() string {
	k := make([]byte, KeySize)
	_, _ = rand.Read(k)
	return base64.StdEncoding.EncodeToString(k)
}

// LoadOrCreateKeyFile reads the key in path, or, when there is no such
// file, writes a new one there with mode 0600 (only its owner reads it).
func LoadOrCreateKeyFile(path string) ([]byte, error) {
	raw, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
			return nil, err
		}
		f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
		if err != nil {
			if errors.Is(err, os.ErrExist) {
				return LoadOrCreateKeyFile(path) // made meanwhile
			}
			return nil, err
		}
		key := NewKey()
		if _, err := f.WriteString(key + "\n"); err != nil {
			f.Close()
			return nil, err
		}
		if err := f.Close(); err != nil {
			return nil, err
		}
		return ParseKey(key)
	}
	if err != nil {
		return nil, err
	}
	k, err := ParseKey(string(raw))
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return k, nil
}

// Seal seals plain with the current key.
func (b *Box) Seal(plain string) (string, error) {
	aead := b.aeads[0]
	nonce := make([]byte, aead.NonceSize(), aead.NonceSize()+len(plain)+aead.Overhead())
	if _, err := rand.Read(nonce); err != nil {
		return "", err
	}
	out := aead.Seal(nonce, nonce, []byte(plain), nil)
	return sundial.SealedPrefix + base64.RawURLEncoding.EncodeToString(out), nil
}

// ErrOpen is the error of a value no key of the Box opens.
var ErrOpen = errors.New("the sealed value does not open with any secrets key")

// Open opens a value Seal made, with whichever key sealed it.
func (b *Box) Open(sealed string) (string, error) {
	plain, _, err := b.open(sealed)
	return plain, err
}

// open opens sealed and says which key opened it: 0 for the current one,
// i for the previous key i.
func (b *Box) open(sealed string) (string, int, error) {
	rest, ok := strings.CutPrefix(sealed, sundial.SealedPrefix)
	if !ok {
		return "", 0, errors.New("not a sealed value (no " + sundial.SealedPrefix + " prefix)")
	}
	raw, err := base64.RawURLEncoding.DecodeString(rest)
	if err != nil {
		return "", 0, errors.New("a sealed value with bad base64")
	}
	for i, aead := range b.aeads {
		n := aead.NonceSize()
		if len(raw) < n+aead.Overhead() {
			return "", 0, errors.New("a sealed value too short")
		}
		if plain, err := aead.Open(nil, raw[:n], raw[n:], nil); err == nil {
			return string(plain), i, nil
		}
	}
	return "", 0, ErrOpen
}

// Reseal returns v as it is stored after a rotation of the key: v itself,
// changed false, when the current key sealed it; sealed again with the
// current key when a previous key sealed it; sealed when it is not sealed
// at all (a value stored in clear before sealing existed). A sealed value
// no key opens is ErrOpen, and a malformed one an error saying so; neither
// holds the value.
func (b *Box) Reseal(v string) (out string, changed bool, err error) {
	if !sundial.Sealed(v) {
		out, err = b.Seal(v)
		return out, err == nil, err
	}
	plain, key, err := b.open(v)
	if err != nil {
		return "", false, err
	}
	if key == 0 {
		return v, false, nil
	}
	out, err = b.Seal(plain)
	return out, err == nil, err
}
