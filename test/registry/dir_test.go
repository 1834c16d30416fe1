package registry

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	contract "platform.dev/platform/internal/registry"
)

func TestAFolderOfPackArchivesIsServedAsARegistry(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	write := func(name string, b []byte) {
		if err := os.WriteFile(filepath.Join(dir, name), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("hello.zip", MustArchive(t, "acme", "hello", "1.0.0"))
	write("broken.zip", []byte("not a zip"))
	write("notes.txt", []byte("ignored"))
	s, err := New(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	var log bytes.Buffer
	if err := s.ServeDir(dir, &log); err != nil {
		t.Fatal(err)
	}
	s.dirInterval = 0
	if err := s.Start("127.0.0.1:0"); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Close)
	if !bytes.Contains(log.Bytes(), []byte("skipping broken.zip")) {
		t.Fatalf("log = %q, want the broken archive named", log.String())
	}

	pool, err := contract.NewPool(s.Transport())
	if err != nil {
		t.Fatal(err)
	}
	defer pool.Close()
	c, err := pool.Client(contract.Options{IndexURL: s.IndexURL(), Endpoint: contract.Endpoint{AllowPrivateNetwork: true}})
	if err != nil {
		t.Fatal(err)
	}
	first, err := c.FetchIndex(ctx, contract.Validators{})
	if err != nil {
		t.Fatal(err)
	}
	if first.Index.Serial < time.Now().Add(-time.Minute).Unix() {
		t.Fatalf("serial %d: a folder registry's serial comes from the clock, so it grows across restarts", first.Index.Serial)
	}
	shard, shardURL, err := c.FetchShard(ctx, first.URL, first.Index.Shards[0])
	if err != nil || len(shard.Sources) != 1 || shard.Sources[0].Versions[0].Version != "1.0.0" {
		t.Fatalf("shard %+v, %v", shard, err)
	}
	m, manifestURL, err := c.FetchManifest(ctx, shardURL, "acme", "hello", shard.Sources[0].Versions[0])
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.FetchArchive(ctx, manifestURL, m); err != nil {
		t.Fatal(err)
	}

	write("hello-2.zip", MustArchive(t, "acme", "hello", "2.0.0"))
	second, err := c.FetchIndex(ctx, first.Validators)
	if err != nil || second.NotModified || second.Index.Serial <= first.Index.Serial {
		t.Fatalf("after adding an archive: %+v, %v; want a new serial", second, err)
	}
	shard, _, err = c.FetchShard(ctx, second.URL, second.Index.Shards[0])
	if err != nil || len(shard.Sources[0].Versions) != 2 {
		t.Fatalf("shard %+v, %v; want both versions", shard, err)
	}
}
