package secrets

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"platform.dev/platform/internal/config"
)

// Where the master key of the Local Vault comes from. The variable wins over the file, so an
// operator can hold the key outside the data directory.
const (
	// MasterKeySetting is the configuration key of the master key itself (32 random bytes in
	// Base64); as an environment variable MasterKeyVariable.
	MasterKeySetting  = "Platform:Secrets:LocalVault:MasterKey"
	MasterKeyVariable = "Platform__Secrets__LocalVault__MasterKey"
	// KeyFileSetting names the key file; KeyFileName in the data directory when unset.
	KeyFileSetting = "Platform:Secrets:LocalVault:KeyFile"
	// KeyFileName is the default key file, in the data directory.
	KeyFileName = "local-vault.key"

	// MasterKeySize is the spec's master key: 32 bytes, for AES-256.
	MasterKeySize = 32
)

// Errors of the master key. Their messages name where the key comes from, never its content.
var (
	// ErrMasterKeyMissing: neither the variable nor the key file holds a key.
	ErrMasterKeyMissing = errors.New("the Local Vault has no master key")
	// ErrMasterKeyExists refuses an initialization: a key file exists or the variable is set.
	ErrMasterKeyExists = errors.New("the Local Vault already has a master key source")
)

// MasterKeyError says why the configured key cannot be used: not Base64, or not 32 bytes.
type MasterKeyError struct {
	// Source is the variable's name or the key file's path.
	Source  string
	Problem string
}

func (e *MasterKeyError) Error() string {
	return fmt.Sprintf("the master key in %s is invalid: %s", e.Source, e.Problem)
}

// MasterKeySource says where the master key is read from. Load reads it at every use, so an
// initialized, repaired or replaced key file takes effect without a restart.
type MasterKeySource struct {
	// Variable is the value of MasterKeySetting; empty when unset.
	Variable string
	// File is the absolute path of the key file.
	File string
}

// MasterKeySourceFrom reads the settings of cfg; the key file defaults to KeyFileName in dataDir.
func MasterKeySourceFrom(cfg *config.Config, dataDir string) (MasterKeySource, error) {
	file := cfg.Get(KeyFileSetting)
	if file == "" {
		file = filepath.Join(dataDir, KeyFileName)
	}
	abs, err := filepath.Abs(file)
	if err != nil {
		return MasterKeySource{}, fmt.Errorf("%s: %w", KeyFileSetting, err)
	}
	return MasterKeySource{Variable: cfg.Get(MasterKeySetting), File: abs}, nil
}

// masterKey is a loaded key and the id that payloads sealed with it record.
type masterKey struct {
	key []byte
	// id tells keys apart without revealing them: a MAC of a fixed label under the key.
	id string
	// source is where it was read, for messages.
	source string
}

// Load reads the master key: the variable when set, else the key file. ErrMasterKeyMissing when
// there is neither, a *MasterKeyError when the one present is malformed.
func (s MasterKeySource) Load() (masterKey, error) {
	if s.Variable != "" {
		return parseMasterKey(s.Variable, MasterKeyVariable)
	}
	if s.File == "" {
		return masterKey{}, ErrMasterKeyMissing
	}
	data, err := os.ReadFile(s.File)
	if errors.Is(err, fs.ErrNotExist) {
		return masterKey{}, ErrMasterKeyMissing
	}
	if err != nil {
		return masterKey{}, &MasterKeyError{Source: s.File, Problem: "the key file cannot be read: " + cause(err)}
	}
	return parseMasterKey(string(data), s.File)
}

// Describe names the source Load reads, for messages.
func (s MasterKeySource) Describe() string {
	if s.Variable != "" {
		return "the variable " + MasterKeyVariable
	}
	return "the key file " + s.File
}

// parseMasterKey accepts exactly one standard Base64 encoding of 32 bytes, surrounding white
// space (a file's final newline) aside.
func parseMasterKey(text, source string) (masterKey, error) {
	text = strings.TrimSpace(text)
	if text == "" {
		return masterKey{}, &MasterKeyError{Source: source, Problem: "it is empty; it must hold 32 random bytes in Base64"}
	}
	key, err := base64.StdEncoding.Strict().DecodeString(text)
	if err != nil {
		return masterKey{}, &MasterKeyError{Source: source, Problem: "it is not one standard Base64 value; it must hold 32 random bytes in Base64 (44 characters)"}
	}
	if len(key) != MasterKeySize {
		return masterKey{}, &MasterKeyError{Source: source, Problem: fmt.Sprintf("it decodes to %d bytes; it must be exactly %d bytes (AES-256)", len(key), MasterKeySize)}
	}
	mac := hmac.New(sha256.New, key)
	mac.Write([]byte("platform.dev local vault master key id v1"))
	return masterKey{key: key, id: hex.EncodeToString(mac.Sum(nil)[:16]), source: source}, nil
}

// Initialize creates the key file with a new random key, create-only (an existing file is never
// touched) and readable by its owner only, and returns its absolute path. With the variable set
// or a file present it returns ErrMasterKeyExists and changes nothing.
func (s MasterKeySource) Initialize() (string, error) {
	if s.Variable != "" {
		return "", fmt.Errorf("%w: the variable %s is set", ErrMasterKeyExists, MasterKeyVariable)
	}
	if s.File == "" {
		return "", errors.New("the Local Vault has no key file path")
	}
	if err := os.MkdirAll(filepath.Dir(s.File), 0o700); err != nil {
		return "", fmt.Errorf("create the directory of the key file: %s", cause(err))
	}
	key := make([]byte, MasterKeySize)
	if _, err := rand.Read(key); err != nil {
		return "", err
	}
	// The key is written whole to a private temporary file, then linked to its name: the link is
	// create-only (of replicas initializing over a shared volume, one wins) and atomic (a replica
	// reading the file meanwhile finds no key or the whole key, never a partial one).
	if _, err := os.Stat(s.File); err == nil {
		return "", fmt.Errorf("%w: the key file %s exists", ErrMasterKeyExists, s.File)
	}
	f, err := os.CreateTemp(filepath.Dir(s.File), "."+filepath.Base(s.File)+".*")
	if err != nil {
		return "", fmt.Errorf("create the key file %s: %s", s.File, cause(err))
	}
	defer os.Remove(f.Name())
	_, err = f.WriteString(base64.StdEncoding.EncodeToString(key) + "\n")
	if err == nil {
		err = f.Sync()
	}
	if closeErr := f.Close(); err == nil {
		err = closeErr
	}
	if err != nil {
		return "", fmt.Errorf("write the key file %s: %w", s.File, err)
	}
	if err := os.Link(f.Name(), s.File); errors.Is(err, fs.ErrExist) {
		return "", fmt.Errorf("%w: the key file %s exists", ErrMasterKeyExists, s.File)
	} else if err != nil {
		return "", fmt.Errorf("create the key file %s: %s", s.File, cause(err))
	}
	return s.File, nil
}

// cause is the reason of a file system error without the path, which messages name themselves.
func cause(err error) string {
	var pathErr *fs.PathError
	if errors.As(err, &pathErr) {
		return pathErr.Err.Error()
	}
	return err.Error()
}

// Check loads the key and reports only whether it can be used: nil, ErrMasterKeyMissing or a
// *MasterKeyError.
func (s MasterKeySource) Check() error {
	_, err := s.Load()
	return err
}
