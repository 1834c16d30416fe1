package secrets

import (
	"context"
	"crypto/aes"
	"crypto/cipher"
	"crypto/rand"
	"database/sql"
	"encoding/binary"
	"errors"
	"fmt"
	"sync"
	"time"

	platformv1 "platform.dev/platform/apis/platform/v1"
	"platform.dev/platform/apiserver/store"
)

// MaxValueBytes is the largest Secret value the Local Vault stores: 64 KiB, room for any API
// key, token, password or PEM bundle.
const MaxValueBytes = 64 << 10

// payloadFormat names how a payload is sealed, so that a later format can be told apart.
const payloadFormat = "aes-256-gcm/v1"

// Errors of values.
var (
	// ErrValueEmpty: a value has at least one byte (removing a value is its own request).
	ErrValueEmpty = errors.New("a Secret value cannot be empty; remove a value with DELETE instead")
	// ErrValueTooLarge: a value is at most MaxValueBytes.
	ErrValueTooLarge = fmt.Errorf("a Secret value is at most %d bytes", MaxValueBytes)
	// ErrValueMissing: the Vault holds no value for the entry.
	ErrValueMissing = errors.New("the Vault holds no value for the Secret")
	// ErrValueUnreadable: the stored payload does not open under the current master key for this
	// entry (another key, or a payload moved from another entry or altered).
	ErrValueUnreadable = errors.New("the stored value cannot be decrypted")
)

// Entry names one value of a Vault: the Vault (its scope and name) and, inside it, the scope of
// the Secret and its vault key. Same-named Secrets of different scopes have different entries.
type Entry struct {
	VaultScope  platformv1.ScopeRef
	Vault       string
	SecretScope platformv1.ScopeRef
	Key         string
}

// associatedData binds a payload to its entry: sealed for one entry, it fails to open as another.
// Each part is length-prefixed so that no two entries share a byte string.
func (e Entry) associatedData() []byte {
	b := []byte(payloadFormat)
	for _, part := range []string{string(e.VaultScope), e.Vault, string(e.SecretScope), e.Key} {
		b = binary.BigEndian.AppendUint32(b, uint32(len(part)))
		b = append(b, part...)
	}
	return b
}

// String names the entry, for messages.
func (e Entry) String() string {
	return fmt.Sprintf("entry %q of Vault %q of %s for %s", e.Key, e.Vault, e.VaultScope, e.SecretScope)
}

// Availability is whether a Local Vault can store and read values, and why not.
type Availability struct {
	Available bool
	// Reason is a Ready reason of the API package: Resolved when available, MasterKeyMissing,
	// MasterKeyInvalid or MasterKeyReplaced when not.
	Reason  string
	Message string
}

// EntryState is what the Vault holds for an entry; never the value.
type EntryState struct {
	Present   bool
	UpdatedAt time.Time
	// SealedWithCurrentKey is false when the payload was sealed under another master key (or no
	// key is loaded).
	SealedWithCurrentKey bool
}

// Change says that Local Vault state changed: one entry was written or removed, or (All) the
// master key was initialized, which concerns every Vault and Secret.
type Change struct {
	Entry Entry
	All   bool
}

// LocalVault stores Secret values in the SQL store, each sealed with AES-256-GCM under the master
// key with a fresh random nonce, apart from the resource metadata (which is in the kube API). The
// master key never enters the store.
type LocalVault struct {
	Store     *store.Store
	MasterKey MasterKeySource
	// Clock stamps writes; time.Now when nil.
	Clock func() time.Time

	mu       sync.Mutex
	watchers map[*watcher]struct{}
}

func (v *LocalVault) now() time.Time {
	if v.Clock != nil {
		return v.Clock().UTC()
	}
	return time.Now().UTC()
}

func (v *LocalVault) q(query string) string { return v.Store.Rebind(query) }

// Availability says whether the Local Vault whose entries carry vaultScope and vault can be used:
// its master key loads, and none of its values were sealed under another key.
func (v *LocalVault) Availability(ctx context.Context, vaultScope platformv1.ScopeRef, vault string) (Availability, error) {
	key, err := v.MasterKey.Load()
	if unavailable, ok := keyUnavailable(err, v.MasterKey); ok {
		return unavailable, nil
	}
	if err != nil {
		return Availability{}, err
	}
	var stale int
	if err := v.Store.DB().QueryRowContext(ctx, v.q(`SELECT COUNT(*) FROM local_vault_entries
		WHERE vault_scope = ? AND vault_name = ? AND key_id <> ?`), string(vaultScope), vault, key.id).Scan(&stale); err != nil {
		return Availability{}, err
	}
	if stale > 0 {
		return Availability{Reason: platformv1.MasterKeyReplacedReason, Message: fmt.Sprintf(
			"%d value(s) of this Vault were stored under another master key than the one in %s and cannot be read; restore that key, or remove those values and set them again",
			stale, v.MasterKey.Describe())}, nil
	}
	return Availability{Available: true, Reason: platformv1.ResolvedReason, Message: "Local Vault with its master key from " + v.MasterKey.Describe()}, nil
}

// KeyAvailability says whether the master key itself loads, whatever any Vault holds.
func (v *LocalVault) KeyAvailability() (Availability, error) {
	_, err := v.MasterKey.Load()
	if unavailable, ok := keyUnavailable(err, v.MasterKey); ok {
		return unavailable, nil
	}
	if err != nil {
		return Availability{}, err
	}
	return Availability{Available: true, Reason: platformv1.ResolvedReason, Message: "the master key loads from " + v.MasterKey.Describe()}, nil
}

// keyUnavailable turns a master key that cannot be used into the Availability that says so.
func keyUnavailable(err error, source MasterKeySource) (Availability, bool) {
	var invalid *MasterKeyError
	switch {
	case errors.Is(err, ErrMasterKeyMissing):
		return Availability{Reason: platformv1.MasterKeyMissingReason, Message: fmt.Sprintf(
			"the Local Vault has no master key: initialize it (a Platform administrator's POST /api/local-vault/initialize creates %s) or set %s to 32 random bytes in Base64",
			source.File, MasterKeyVariable)}, true
	case errors.As(err, &invalid):
		return Availability{Reason: platformv1.MasterKeyInvalidReason, Message: invalid.Error()}, true
	}
	return Availability{}, false
}

// State says whether the Vault holds a value for e.
func (v *LocalVault) State(ctx context.Context, e Entry) (EntryState, error) {
	var (
		keyID string
		state EntryState
	)
	err := v.Store.DB().QueryRowContext(ctx, v.q(`SELECT key_id, updated_at FROM local_vault_entries
		WHERE vault_scope = ? AND vault_name = ? AND secret_scope = ? AND entry_key = ?`),
		string(e.VaultScope), e.Vault, string(e.SecretScope), e.Key).Scan(&keyID, &state.UpdatedAt)
	if errors.Is(err, sql.ErrNoRows) {
		return EntryState{}, nil
	}
	if err != nil {
		return EntryState{}, err
	}
	state.Present = true
	if key, err := v.MasterKey.Load(); err == nil {
		state.SealedWithCurrentKey = key.id == keyID
	}
	return state, nil
}

// Put seals value for e under the master key with a fresh nonce and stores it, replacing what e
// held. Nothing is stored when the value is empty or too large, or the Vault is unavailable.
func (v *LocalVault) Put(ctx context.Context, e Entry, value []byte) error {
	if err := CheckValue(value); err != nil {
		return err
	}
	availability, err := v.Availability(ctx, e.VaultScope, e.Vault)
	if err != nil {
		return err
	}
	if !availability.Available {
		return &UnavailableError{Availability: availability}
	}
	key, err := v.MasterKey.Load()
	if err != nil {
		return err
	}
	nonce, sealed, err := seal(key.key, e.associatedData(), value)
	if err != nil {
		return err
	}
	ciphertext, tag := sealed[:len(sealed)-tagSize], sealed[len(sealed)-tagSize:]
	err = v.Store.InTx(ctx, func(tx *sql.Tx) error {
		_, err := tx.ExecContext(ctx, v.q(`INSERT INTO local_vault_entries
			(vault_scope, vault_name, secret_scope, entry_key, format, key_id, nonce, ciphertext, tag, updated_at)
			VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
			ON CONFLICT (vault_scope, vault_name, secret_scope, entry_key) DO UPDATE SET
			format = excluded.format, key_id = excluded.key_id, nonce = excluded.nonce,
			ciphertext = excluded.ciphertext, tag = excluded.tag, updated_at = excluded.updated_at`),
			string(e.VaultScope), e.Vault, string(e.SecretScope), e.Key, payloadFormat, key.id, nonce, ciphertext, tag, v.now())
		return err
	})
	if err != nil {
		return err
	}
	v.publish(Change{Entry: e})
	return nil
}

// CheckValue refuses a value the Local Vault does not store: empty, or over MaxValueBytes.
func CheckValue(value []byte) error {
	switch {
	case len(value) == 0:
		return ErrValueEmpty
	case len(value) > MaxValueBytes:
		return ErrValueTooLarge
	}
	return nil
}

// Delete removes the value of e; false when there was none. It needs no master key, so values
// sealed under a replaced key can be removed.
func (v *LocalVault) Delete(ctx context.Context, e Entry) (bool, error) {
	var n int64
	err := v.Store.InTx(ctx, func(tx *sql.Tx) error {
		res, err := tx.ExecContext(ctx, v.q(`DELETE FROM local_vault_entries
			WHERE vault_scope = ? AND vault_name = ? AND secret_scope = ? AND entry_key = ?`),
			string(e.VaultScope), e.Vault, string(e.SecretScope), e.Key)
		if err != nil {
			return err
		}
		n, err = res.RowsAffected()
		return err
	})
	if err != nil {
		return false, err
	}
	if n > 0 {
		v.publish(Change{Entry: e})
	}
	return n > 0, nil
}

// Get opens the value of e. ErrValueMissing when there is none; an *UnavailableError when the
// master key is missing or invalid; ErrValueUnreadable when the payload does not open for e
// under the current key.
func (v *LocalVault) Get(ctx context.Context, e Entry) ([]byte, error) {
	key, err := v.MasterKey.Load()
	if unavailable, ok := keyUnavailable(err, v.MasterKey); ok {
		return nil, &UnavailableError{Availability: unavailable}
	}
	if err != nil {
		return nil, err
	}
	var (
		format, keyID          string
		nonce, ciphertext, tag []byte
	)
	err = v.Store.DB().QueryRowContext(ctx, v.q(`SELECT format, key_id, nonce, ciphertext, tag FROM local_vault_entries
		WHERE vault_scope = ? AND vault_name = ? AND secret_scope = ? AND entry_key = ?`),
		string(e.VaultScope), e.Vault, string(e.SecretScope), e.Key).Scan(&format, &keyID, &nonce, &ciphertext, &tag)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, ErrValueMissing
	}
	if err != nil {
		return nil, err
	}
	if format != payloadFormat {
		return nil, fmt.Errorf("%w: unknown payload format %q", ErrValueUnreadable, format)
	}
	if keyID != key.id {
		return nil, fmt.Errorf("%w: it was stored under another master key than the one in %s", ErrValueUnreadable, v.MasterKey.Describe())
	}
	value, err := open(key.key, e.associatedData(), nonce, append(append([]byte{}, ciphertext...), tag...))
	if err != nil {
		return nil, fmt.Errorf("%w: it does not belong to this Secret's entry or was altered", ErrValueUnreadable)
	}
	return value, nil
}

// Initialize creates the master key file (see MasterKeySource.Initialize) and tells watchers
// that every Vault may have become available.
func (v *LocalVault) Initialize() (string, error) {
	path, err := v.MasterKey.Initialize()
	if err != nil {
		return "", err
	}
	v.publish(Change{All: true})
	return path, nil
}

// UnavailableError refuses a write or read of a Vault that is not available.
type UnavailableError struct {
	Availability Availability
}

func (e *UnavailableError) Error() string {
	return "the Vault is unavailable: " + e.Availability.Message
}

const tagSize = 16

// seal encrypts plaintext with AES-256-GCM under key with a fresh random 96-bit nonce; the
// result is ciphertext followed by the tag.
func seal(key, associatedData, plaintext []byte) (nonce, sealed []byte, err error) {
	aead, err := newAEAD(key)
	if err != nil {
		return nil, nil, err
	}
	nonce = make([]byte, aead.NonceSize())
	if _, err := rand.Read(nonce); err != nil {
		return nil, nil, err
	}
	return nonce, aead.Seal(nil, nonce, plaintext, associatedData), nil
}

func open(key, associatedData, nonce, sealed []byte) ([]byte, error) {
	aead, err := newAEAD(key)
	if err != nil {
		return nil, err
	}
	if len(nonce) != aead.NonceSize() {
		return nil, errors.New("bad nonce length")
	}
	return aead.Open(nil, nonce, sealed, associatedData)
}

func newAEAD(key []byte) (cipher.AEAD, error) {
	block, err := aes.NewCipher(key)
	if err != nil {
		return nil, err
	}
	return cipher.NewGCM(block)
}

// watcher is one subscriber of Watch: changes queue up (coalesced into one All when too many)
// and a signal wakes the reader.
type watcher struct {
	mu     sync.Mutex
	queue  []Change
	signal chan struct{}
}

// maxQueuedChanges bounds a slow watcher's queue; past it, the changes become one All.
const maxQueuedChanges = 1024

func (v *LocalVault) publish(c Change) {
	v.mu.Lock()
	defer v.mu.Unlock()
	for w := range v.watchers {
		w.mu.Lock()
		if len(w.queue) >= maxQueuedChanges {
			w.queue = append(w.queue[:0], Change{All: true})
		} else {
			w.queue = append(w.queue, c)
		}
		w.mu.Unlock()
		select {
		case w.signal <- struct{}{}:
		default:
		}
	}
}

// Watch calls fn with every change this process makes to the Local Vault until ctx ends, in
// order, from one goroutine. Changes made by other replicas are not seen: their watchers resync.
func (v *LocalVault) Watch(ctx context.Context, fn func(Change)) {
	w := &watcher{signal: make(chan struct{}, 1)}
	v.mu.Lock()
	if v.watchers == nil {
		v.watchers = map[*watcher]struct{}{}
	}
	v.watchers[w] = struct{}{}
	v.mu.Unlock()
	go func() {
		defer func() {
			v.mu.Lock()
			delete(v.watchers, w)
			v.mu.Unlock()
		}()
		for {
			select {
			case <-ctx.Done():
				return
			case <-w.signal:
			}
			w.mu.Lock()
			changes := w.queue
			w.queue = nil
			w.mu.Unlock()
			for _, c := range changes {
				fn(c)
			}
		}
	}()
}
