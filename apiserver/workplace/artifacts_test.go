package workplace

import (
	"bytes"
	"context"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	. "github.com/onsi/gomega"
)

func TestFileArtifactsKeepBytesOwnerOnlyAndRefuseOversizedOnes(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	store := FileArtifacts{Dir: filepath.Join(t.TempDir(), "artifacts")}

	key, n, err := store.Put(ctx, strings.NewReader("quarterly numbers"))
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(n).To(Equal(int64(len("quarterly numbers"))))
	r, err := store.Open(ctx, key)
	g.Expect(err).NotTo(HaveOccurred())
	data, _ := io.ReadAll(r)
	r.Close()
	g.Expect(string(data)).To(Equal("quarterly numbers"))
	path, _ := store.path(key)
	info, err := os.Stat(path)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(info.Mode().Perm()).To(Equal(os.FileMode(0o600)), "artifact bytes are owner-only")

	_, _, err = store.Put(ctx, bytes.NewReader(make([]byte, MaxArtifactBytes+1)))
	g.Expect(err).To(MatchError(ErrArtifactTooLarge))
	leftovers, _ := filepath.Glob(filepath.Join(store.Dir, "*", ".put-*"))
	g.Expect(leftovers).To(BeEmpty(), "a refused artifact leaves nothing behind")

	g.Expect(store.Delete(ctx, key)).To(Succeed())
	g.Expect(store.Delete(ctx, key)).To(Succeed(), "deleting twice is no error")
	_, err = store.Open(ctx, "../../etc/passwd")
	g.Expect(err).To(HaveOccurred(), "a key never names a path")
}
