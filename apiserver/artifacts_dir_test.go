package apiserver

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/go-logr/logr/funcr"

	"platform.dev/platform/apiserver/workplace"
	"platform.dev/platform/internal/config"
)

// A replica on PostgreSQL without a configured artifact directory says at start that replicas
// must share one: otherwise a download served by another replica misses bytes with no word why.
// On SQLite, or with the directory configured, nothing is said.
func TestAReplicaOnPostgreSQLWithItsOwnArtifactDirectorySaysReplicasMustShareOne(t *testing.T) {
	for name, tc := range map[string]struct {
		settings map[string]string
		postgres bool
		wantDir  string
		wantNote bool
	}{
		"PostgreSQL, no directory configured": {postgres: true, wantDir: filepath.Join("data", "artifacts"), wantNote: true},
		"PostgreSQL, a shared directory":      {settings: map[string]string{workplace.ArtifactsDirectorySetting: "/shared/artifacts"}, postgres: true, wantDir: "/shared/artifacts"},
		"SQLite, no directory configured":     {wantDir: filepath.Join("data", "artifacts")},
	} {
		t.Run(name, func(t *testing.T) {
			var logged strings.Builder
			log := funcr.New(func(prefix, args string) { logged.WriteString(args + "\n") }, funcr.Options{})
			dir := artifactsDirectory(config.FromMap(config.Production, tc.settings), "data", tc.postgres, log)
			if dir != tc.wantDir {
				t.Errorf("directory %q, want %q", dir, tc.wantDir)
			}
			if said := strings.Contains(logged.String(), "must share one directory too"); said != tc.wantNote {
				t.Errorf("said %v, want %v: %q", said, tc.wantNote, logged.String())
			}
		})
	}
}
