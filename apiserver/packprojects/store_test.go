package packprojects_test

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"platform.dev/platform/apiserver/packprojects"
	"platform.dev/platform/apiserver/store"
	"platform.dev/platform/apiserver/store/storetest"
)

func TestMain(m *testing.M) { storetest.Main(m) }

// A workspace keeps at most MaxProjects projects (each holds an archive of up to 8 MiB): one more
// is refused until one is deleted, and another workspace is not affected.
func TestAWorkspaceKeepsABoundedNumberOfPackProjects(t *testing.T) {
	storetest.ForEachDialect(t, func(t *testing.T, db *store.Store) {
		ctx := context.Background()
		s := packprojects.NewStore(db)
		project := func(ws string, i int) packprojects.Project {
			return packprojects.Project{Workspace: ws, Publisher: "acme", Name: "kit", Version: fmt.Sprintf("1.0.%d", i), Archive: []byte("zip")}
		}
		var first packprojects.Project
		for i := range packprojects.MaxProjects {
			p, err := s.Create(ctx, project("full", i))
			if err != nil {
				t.Fatalf("project %d: %v", i, err)
			}
			if i == 0 {
				first = p
			}
		}
		if _, err := s.Create(ctx, project("full", packprojects.MaxProjects)); !errors.Is(err, packprojects.ErrTooMany) {
			t.Fatalf("one more than the bound: %v", err)
		}
		if _, err := s.Create(ctx, project("other", 0)); err != nil {
			t.Fatalf("another workspace: %v", err)
		}
		if err := s.Delete(ctx, "full", first.ID); err != nil {
			t.Fatal(err)
		}
		if _, err := s.Create(ctx, project("full", packprojects.MaxProjects)); err != nil {
			t.Fatalf("after a delete: %v", err)
		}
	})
}
