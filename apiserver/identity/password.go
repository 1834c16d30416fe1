package identity

import (
	"crypto/rand"
	"crypto/subtle"
	"encoding/base64"
	"errors"
	"fmt"
	"strings"
	"unicode"
	"unicode/utf8"

	"golang.org/x/crypto/argon2"
)

// MinPasswordLength is the spec's minimum password length, counted in Unicode characters.
const MinPasswordLength = 12

// PasswordError lists every password rule that a candidate password does not meet.
type PasswordError struct {
	Unmet []string
}

func (e *PasswordError) Error() string {
	return "password does not meet the rules: it needs " + strings.Join(e.Unmet, ", ")
}

// ValidatePassword checks the spec's password rule: at least 12 characters with an uppercase
// letter, a lowercase letter, a digit and a non-alphanumeric character. The classes are Unicode
// classes (É is uppercase, ß lowercase, ٣ a digit). The error is a *PasswordError naming every
// unmet rule.
func ValidatePassword(password string) error {
	var upper, lower, digit, other bool
	for _, r := range password {
		switch {
		case unicode.IsUpper(r):
			upper = true
		case unicode.IsLower(r):
			lower = true
		case unicode.IsDigit(r):
			digit = true
		case !unicode.IsLetter(r) && !unicode.IsNumber(r):
			other = true
		}
	}
	var unmet []string
	if utf8.RuneCountInString(password) < MinPasswordLength {
		unmet = append(unmet, fmt.Sprintf("at least %d characters", MinPasswordLength))
	}
	if !upper {
		unmet = append(unmet, "an uppercase letter")
	}
	if !lower {
		unmet = append(unmet, "a lowercase letter")
	}
	if !digit {
		unmet = append(unmet, "a digit")
	}
	if !other {
		unmet = append(unmet, "a non-alphanumeric character")
	}
	if len(unmet) > 0 {
		return &PasswordError{Unmet: unmet}
	}
	return nil
}

// HashParams are the argon2id cost parameters.
type HashParams struct {
	MemoryKiB   uint32
	Iterations  uint32
	Parallelism uint8
	SaltLen     int
	KeyLen      int
}

// DefaultHashParams are OWASP's minimum for argon2id: 19 MiB of memory, two passes, one lane,
// with a 16-byte random salt and a 32-byte key.
var DefaultHashParams = HashParams{MemoryKiB: 19 * 1024, Iterations: 2, Parallelism: 1, SaltLen: 16, KeyLen: 32}

// Bounds for parameters read back from a stored hash, so that a damaged row cannot make a login
// allocate gigabytes or spin.
const (
	maxMemoryKiB  = 1 << 21 // 2 GiB
	maxIterations = 64
	maxKeyLen     = 128
)

var errMalformedHash = errors.New("identity: malformed password hash")

var b64 = base64.RawStdEncoding

// HashPassword hashes password with argon2id and DefaultHashParams and returns the PHC-style
// string `$argon2id$v=19$m=19456,t=2,p=1$<salt>$<hash>` (unpadded standard Base64).
func HashPassword(password string) (string, error) {
	return hashWith(password, DefaultHashParams)
}

func hashWith(password string, p HashParams) (string, error) {
	salt := make([]byte, p.SaltLen)
	if _, err := rand.Read(salt); err != nil {
		return "", err
	}
	key := argon2.IDKey([]byte(password), salt, p.Iterations, p.MemoryKiB, p.Parallelism, uint32(p.KeyLen))
	return fmt.Sprintf("$argon2id$v=%d$m=%d,t=%d,p=%d$%s$%s",
		argon2.Version, p.MemoryKiB, p.Iterations, p.Parallelism, b64.EncodeToString(salt), b64.EncodeToString(key)), nil
}

// parseHash reads the parameters, salt and key of an encoded argon2id hash.
func parseHash(encoded string) (HashParams, []byte, []byte, error) {
	var p HashParams
	parts := strings.Split(encoded, "$")
	if len(parts) != 6 || parts[0] != "" || parts[1] != "argon2id" {
		return p, nil, nil, errMalformedHash
	}
	var version int
	if _, err := fmt.Sscanf(parts[2], "v=%d", &version); err != nil || version != argon2.Version {
		return p, nil, nil, errMalformedHash
	}
	if n, err := fmt.Sscanf(parts[3], "m=%d,t=%d,p=%d", &p.MemoryKiB, &p.Iterations, &p.Parallelism); err != nil || n != 3 {
		return p, nil, nil, errMalformedHash
	}
	if p.MemoryKiB == 0 || p.MemoryKiB > maxMemoryKiB || p.Iterations == 0 || p.Iterations > maxIterations ||
		p.Parallelism == 0 || p.MemoryKiB < 8*uint32(p.Parallelism) {
		return p, nil, nil, errMalformedHash
	}
	salt, err := b64.DecodeString(parts[4])
	if err != nil || len(salt) < 8 {
		return p, nil, nil, errMalformedHash
	}
	key, err := b64.DecodeString(parts[5])
	if err != nil || len(key) < 16 || len(key) > maxKeyLen {
		return p, nil, nil, errMalformedHash
	}
	p.SaltLen, p.KeyLen = len(salt), len(key)
	return p, salt, key, nil
}

// VerifyPassword reports whether password matches the encoded hash, using the parameters stored
// in the hash (so that raising DefaultHashParams keeps older hashes valid) and a constant-time
// comparison. A malformed hash is an error.
func VerifyPassword(encoded, password string) (bool, error) {
	p, salt, key, err := parseHash(encoded)
	if err != nil {
		return false, err
	}
	got := argon2.IDKey([]byte(password), salt, p.Iterations, p.MemoryKiB, p.Parallelism, uint32(len(key)))
	return subtle.ConstantTimeCompare(got, key) == 1, nil
}

// NeedsRehash reports whether encoded was made with weaker parameters than DefaultHashParams;
// Login rehashes such a password after it verified it.
func NeedsRehash(encoded string) bool {
	p, _, _, err := parseHash(encoded)
	if err != nil {
		return true
	}
	d := DefaultHashParams
	return p.MemoryKiB < d.MemoryKiB || p.Iterations < d.Iterations || p.SaltLen < d.SaltLen || p.KeyLen < d.KeyLen
}
