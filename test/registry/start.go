package registry

// TB is what Start needs of a *testing.T (kept an interface so the binary's sub-command does not
// import the testing package).
type TB interface {
	Helper()
	TempDir() string
	Cleanup(func())
	Fatalf(format string, args ...any)
}

// Start serves a registry on a free loopback port for the test's lifetime, publishing archives
// (see Archive to build some).
func Start(t TB, archives ...[]byte) *Server {
	t.Helper()
	s, err := New(t.TempDir())
	if err != nil {
		t.Fatalf("test registry: %v", err)
	}
	if err := s.Republish(); err != nil {
		t.Fatalf("test registry: %v", err)
	}
	for _, a := range archives {
		if err := s.AddArchive(a); err != nil {
			t.Fatalf("test registry: %v", err)
		}
	}
	if err := s.Start("127.0.0.1:0"); err != nil {
		t.Fatalf("test registry: %v", err)
	}
	t.Cleanup(s.Close)
	return s
}

// MustArchive is Archive for tests.
func MustArchive(t TB, publisher, name, ver string) []byte {
	t.Helper()
	b, err := Archive(publisher, name, ver)
	if err != nil {
		t.Fatalf("test Pack archive: %v", err)
	}
	return b
}
