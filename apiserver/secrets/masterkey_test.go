package secrets_test

import (
	"encoding/base64"
	"os"
	"path/filepath"
	"strings"
	"testing"

	. "github.com/onsi/gomega"

	"platform.dev/platform/apiserver/secrets"
	"platform.dev/platform/internal/config"
)

func TestMasterKeyIsExactly32BytesOfBase64FromTheVariableOrTheFile(t *testing.T) {
	key := newKey()
	tests := map[string]struct {
		variable string
		// file is written as the key file's content; nil leaves no file.
		file        *string
		wantMissing bool
		// wantProblem is part of the *MasterKeyError's message.
		wantProblem string
	}{
		"no variable and no file is a missing key":        {wantMissing: true},
		"the variable holds the key":                      {variable: key},
		"the file holds the key, its final newline aside": {file: ptr(key + "\n")},
		"the variable wins over a malformed file":         {variable: key, file: ptr("garbage")},
		"a key that is not Base64 is refused":             {variable: "not base64 at all!", wantProblem: "not one standard Base64 value"},
		"a 16-byte key is refused":                        {file: ptr(base64.StdEncoding.EncodeToString(make([]byte, 16))), wantProblem: "decodes to 16 bytes; it must be exactly 32 bytes"},
		"a 33-byte key is refused":                        {variable: base64.StdEncoding.EncodeToString(make([]byte, 33)), wantProblem: "decodes to 33 bytes"},
		"two keys in one file are refused":                {file: ptr(key + "\n" + key + "\n"), wantProblem: "not one standard Base64 value"},
		"an empty file is refused":                        {file: ptr(""), wantProblem: "it is empty"},
		"URL-safe Base64 is refused":                      {variable: strings.NewReplacer("+", "-", "/", "_").Replace(base64.StdEncoding.EncodeToString([]byte(strings.Repeat("\xfb\xff", 16)))), wantProblem: "not one standard Base64 value"},
	}
	for name, tt := range tests {
		t.Run(name, func(t *testing.T) {
			g := NewWithT(t)
			source := secrets.MasterKeySource{Variable: tt.variable, File: filepath.Join(t.TempDir(), secrets.KeyFileName)}
			if tt.file != nil {
				g.Expect(os.WriteFile(source.File, []byte(*tt.file), 0o600)).To(Succeed())
			}
			err := source.Check()
			switch {
			case tt.wantMissing:
				g.Expect(err).To(MatchError(secrets.ErrMasterKeyMissing))
			case tt.wantProblem != "":
				var invalid *secrets.MasterKeyError
				g.Expect(err).To(BeAssignableToTypeOf(invalid))
				g.Expect(err.Error()).To(ContainSubstring(tt.wantProblem))
				g.Expect(err.Error()).NotTo(ContainSubstring(key), "the message never repeats a key")
			default:
				g.Expect(err).NotTo(HaveOccurred())
			}
		})
	}
}

func TestInitializeCreatesAnOwnerOnlyKeyFileOnce(t *testing.T) {
	g := NewWithT(t)
	dir := t.TempDir()
	source, err := secrets.MasterKeySourceFrom(config.FromMap("Testing", nil), filepath.Join(dir, "data"))
	g.Expect(err).NotTo(HaveOccurred())

	path, err := source.Initialize()
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(filepath.IsAbs(path)).To(BeTrue())
	g.Expect(path).To(Equal(filepath.Join(dir, "data", secrets.KeyFileName)))
	info, err := os.Stat(path)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(info.Mode().Perm()).To(Equal(os.FileMode(0o600)), "readable by its owner only")
	g.Expect(source.Check()).To(Succeed(), "the new key loads")
	first, err := os.ReadFile(path)
	g.Expect(err).NotTo(HaveOccurred())

	_, err = source.Initialize()
	g.Expect(err).To(MatchError(secrets.ErrMasterKeyExists), "a second initialization is refused")
	again, _ := os.ReadFile(path)
	g.Expect(again).To(Equal(first), "and changes nothing")
}

func TestInitializeRefusesWhenTheVariableIsSetAndCreatesNoFile(t *testing.T) {
	g := NewWithT(t)
	dir := t.TempDir()
	source, err := secrets.MasterKeySourceFrom(config.FromMap("Testing", map[string]string{secrets.MasterKeySetting: newKey()}), dir)
	g.Expect(err).NotTo(HaveOccurred())
	_, err = source.Initialize()
	g.Expect(err).To(MatchError(secrets.ErrMasterKeyExists))
	g.Expect(err.Error()).To(ContainSubstring(secrets.MasterKeyVariable))
	_, statErr := os.Stat(filepath.Join(dir, secrets.KeyFileName))
	g.Expect(os.IsNotExist(statErr)).To(BeTrue(), "no key file was created")
}

func TestInitializeRefusesAnExistingMalformedFileAndKeepsIt(t *testing.T) {
	g := NewWithT(t)
	source := secrets.MasterKeySource{File: filepath.Join(t.TempDir(), secrets.KeyFileName)}
	g.Expect(os.WriteFile(source.File, []byte("broken"), 0o600)).To(Succeed())
	_, err := source.Initialize()
	g.Expect(err).To(MatchError(secrets.ErrMasterKeyExists))
	content, _ := os.ReadFile(source.File)
	g.Expect(string(content)).To(Equal("broken"))
}

func ptr[T any](v T) *T { return &v }
