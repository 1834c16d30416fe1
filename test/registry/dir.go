package registry

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"platform.dev/platform/internal/pack"
	contract "platform.dev/platform/internal/registry"
)

// maxDirArchives bounds how many archives a folder registry reads.
const maxDirArchives = 1000

// ServeDir publishes the *.zip Pack archives of dir, and publishes again (a new serial) when
// the folder's archives change, noticed at an index request (at most once a second). Archives
// that are not valid Packs are skipped with a line on log.
func (s *Server) ServeDir(dir string, log io.Writer) error {
	s.mu.Lock()
	s.dir, s.dirLog, s.dirInterval = dir, log, time.Second
	s.mu.Unlock()
	return s.reloadDir(true)
}

func (s *Server) reloadDir(force bool) error {
	s.mu.Lock()
	dir, log := s.dir, s.dirLog
	if dir == "" || (!force && time.Since(s.dirChecked) < s.dirInterval) {
		s.mu.Unlock()
		return nil
	}
	s.dirChecked = time.Now()
	s.mu.Unlock()

	entries, err := os.ReadDir(dir)
	if err != nil {
		return err
	}
	var names []string
	var fingerprint strings.Builder
	for _, e := range entries {
		if e.IsDir() || !strings.HasSuffix(e.Name(), ".zip") {
			continue
		}
		info, err := e.Info()
		if err != nil {
			continue
		}
		names = append(names, e.Name())
		fmt.Fprintf(&fingerprint, "%s %d %d\n", e.Name(), info.Size(), info.ModTime().UnixNano())
		if len(names) == maxDirArchives {
			break
		}
	}
	sort.Strings(names)
	s.mu.Lock()
	unchanged := fingerprint.String() == s.dirFingerprint
	s.mu.Unlock()
	if unchanged && !force {
		return nil
	}
	versions := map[string]*version{}
	for _, name := range names {
		b, err := readBounded(filepath.Join(dir, name), contract.MaxArchiveBytes)
		if err == nil {
			var a *pack.Archive
			if a, err = pack.Read(b, name); err == nil {
				m := a.Manifest.Metadata
				versions[m.Publisher+"/"+m.Name+"/"+m.Version] = &version{publisher: m.Publisher, source: m.Name, version: m.Version,
					displayName: m.DisplayName, description: m.Description, archive: b}
			}
		}
		if err != nil && log != nil {
			fmt.Fprintf(log, "skipping %s: %v\n", name, err)
		}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.dirFingerprint = fingerprint.String()
	s.versions = versions
	for _, v := range versions {
		if _, ok := s.statuses[v.publisher]; !ok {
			s.statuses[v.publisher] = contract.Declared
		}
	}
	for p := range s.statuses {
		if !s.hasPublisherLocked(p) && !s.pinned[p] {
			delete(s.statuses, p)
		}
	}
	return s.publishLocked()
}

func (s *Server) hasPublisherLocked(p string) bool {
	for _, v := range s.versions {
		if v.publisher == p {
			return true
		}
	}
	return false
}

func readBounded(path string, limit int64) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, limit+1))
	if err != nil {
		return nil, err
	}
	if int64(len(b)) > limit {
		return nil, fmt.Errorf("larger than %d bytes", limit)
	}
	return b, nil
}
