package workplace

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
)

// MaxArtifactBytes bounds one artifact's bytes: a file answer or a deliverable.
const MaxArtifactBytes = 16 << 20

// ErrArtifactTooLarge: the bytes exceed MaxArtifactBytes; nothing was stored.
var ErrArtifactTooLarge = fmt.Errorf("an artifact is at most %d bytes", MaxArtifactBytes)

// ArtifactStore holds the bytes of artifacts under opaque keys; their metadata (name, media type,
// length, key) is in the SQL store. Producers store the bytes before they record the Result or
// answer that declares them, so metadata never points at missing bytes.
type ArtifactStore interface {
	// Put stores at most MaxArtifactBytes from r under a new key and returns the key and length.
	Put(ctx context.Context, r io.Reader) (key string, length int64, err error)
	// Open reads the bytes stored under key.
	Open(ctx context.Context, key string) (io.ReadCloser, error)
	// Delete removes the bytes stored under key; a missing key is no error.
	Delete(ctx context.Context, key string) error
}

// ArtifactsDirectorySetting names the directory of artifact bytes; `<data-dir>/artifacts` when
// unset. Replicas point it at one shared directory (variable Platform__Artifacts__Directory).
const ArtifactsDirectorySetting = "Platform:Artifacts:Directory"

// FileArtifacts stores artifacts as files of a directory (`<data-dir>/artifacts` by default),
// owner-only. Replicas of the platform that share a PostgreSQL store must share this directory
// too (a shared volume), since any replica may serve a download.
type FileArtifacts struct {
	Dir string
}

var keyPattern = regexp.MustCompile(`^[a-f0-9]{32}$`)

func (f FileArtifacts) path(key string) (string, error) {
	if !keyPattern.MatchString(key) {
		return "", fmt.Errorf("artifact store: malformed key")
	}
	return filepath.Join(f.Dir, key[:2], key), nil
}

// Put implements ArtifactStore: the file is written under a temporary name, synced and renamed,
// so a key never names a partial file.
func (f FileArtifacts) Put(ctx context.Context, r io.Reader) (string, int64, error) {
	b := make([]byte, 16)
	if _, err := rand.Read(b); err != nil {
		return "", 0, err
	}
	key := hex.EncodeToString(b)
	path, _ := f.path(key)
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return "", 0, fmt.Errorf("artifact store: %w", err)
	}
	tmp, err := os.CreateTemp(filepath.Dir(path), ".put-*")
	if err != nil {
		return "", 0, fmt.Errorf("artifact store: %w", err)
	}
	defer os.Remove(tmp.Name())
	n, err := io.Copy(tmp, io.LimitReader(r, MaxArtifactBytes+1))
	if err == nil && n > MaxArtifactBytes {
		err = ErrArtifactTooLarge
	}
	if err == nil {
		err = tmp.Sync()
	}
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = ctx.Err()
	}
	if err == nil {
		err = os.Rename(tmp.Name(), path)
	}
	if err != nil {
		if errors.Is(err, ErrArtifactTooLarge) {
			return "", 0, err
		}
		return "", 0, fmt.Errorf("artifact store: %w", err)
	}
	return key, n, nil
}

// Open implements ArtifactStore.
func (f FileArtifacts) Open(_ context.Context, key string) (io.ReadCloser, error) {
	path, err := f.path(key)
	if err != nil {
		return nil, err
	}
	return os.Open(path)
}

// Delete implements ArtifactStore.
func (f FileArtifacts) Delete(_ context.Context, key string) error {
	path, err := f.path(key)
	if err != nil {
		return err
	}
	if err := os.Remove(path); err != nil && !errors.Is(err, os.ErrNotExist) {
		return err
	}
	return nil
}
