// Package registry is a registry v1 (docs/registry-v1.md) served over HTTPS on loopback with its
// own CA, for tests and local try-outs: it builds the index, shards and manifests from Pack
// archives (computing every digest itself), counts requests per path, and can misbehave on
// purpose (redirect, hang, trickle, grow without end, roll its index back, change a digest,
// revoke a publisher).
package registry

import (
	"archive/zip"
	"bytes"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"sort"
	"strings"
	"sync"
	"time"

	"platform.dev/platform/apiserver/pki"
	"platform.dev/platform/internal/pack"
	contract "platform.dev/platform/internal/registry"
)

// Paths of the documents.
const (
	IndexPath = "/index.json"
)

// ShardPath is the path of a publisher's shard (one shard per publisher).
func ShardPath(publisher string) string { return "/shards/" + publisher + ".json" }

// ManifestPath is the path of a version's manifest.
func ManifestPath(publisher, source, version string) string {
	return "/manifests/" + publisher + "/" + source + "/" + version + ".json"
}

// ArchivePath is the path of a version's Pack archive.
func ArchivePath(publisher, source, version string) string {
	return "/packs/" + publisher + "/" + source + "/" + version + ".zip"
}

type version struct {
	publisher, source, version string
	displayName, description   string
	archive                    []byte
	catalogLatest              bool
}

type behaviour struct {
	redirect string        // Location to answer with
	hang     bool          // never answer
	trickle  time.Duration // write a byte every trickle
	endless  bool          // a body without end
}

// Server is a test registry. Its methods are safe for concurrent use.
type Server struct {
	mu         sync.Mutex
	versions   map[string]*version // by publisher/source/version
	statuses   map[string]contract.PublisherStatus
	serial     int64
	published  time.Time
	docs       map[string][]byte // path → body of the current publication
	olderIndex []byte            // served instead of the index when set
	overrides  map[string][]byte
	behaviours map[string]behaviour
	requests   map[string]int
	bodyBytes  map[string]int64
	auth       map[string][]string
	token      string
	pinned     map[string]bool // publishers whose status was set explicitly

	dir            string
	dirLog         io.Writer
	dirChecked     time.Time
	dirInterval    time.Duration
	dirFingerprint string

	pki      pki.Files
	listener net.Listener
	srv      *http.Server
	done     chan struct{}
	closeMu  sync.Once
}

// New makes a registry whose CA and serving certificate (for localhost, 127.0.0.1 and ::1) live
// in pkiDir, reused when present. It serves nothing until Start.
func New(pkiDir string) (*Server, error) {
	files, err := pki.Ensure(pkiDir, nil)
	if err != nil {
		return nil, err
	}
	return &Server{versions: map[string]*version{}, statuses: map[string]contract.PublisherStatus{},
		docs: map[string][]byte{}, overrides: map[string][]byte{}, behaviours: map[string]behaviour{},
		requests: map[string]int{}, bodyBytes: map[string]int64{}, auth: map[string][]string{}, pinned: map[string]bool{},
		pki: files, done: make(chan struct{})}, nil
}

// Start serves on addr ("127.0.0.1:0" for any free port).
func (s *Server) Start(addr string) error {
	cert, err := tls.LoadX509KeyPair(s.pki.ServingCert(), s.pki.ServingKey())
	if err != nil {
		return err
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return err
	}
	s.listener = ln
	s.srv = &http.Server{Handler: http.HandlerFunc(s.serve), ReadHeaderTimeout: 10 * time.Second, MaxHeaderBytes: 64 << 10,
		TLSConfig: &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12},
		ErrorLog:  nil}
	go func() { _ = s.srv.ServeTLS(ln, "", "") }()
	return nil
}

// Close stops the server, releasing hanging and endless answers.
func (s *Server) Close() {
	s.closeMu.Do(func() {
		close(s.done)
		if s.srv != nil {
			_ = s.srv.Close()
		}
	})
}

// URL is the registry's origin, https://127.0.0.1:<port>.
func (s *Server) URL() string { return "https://" + s.listener.Addr().String() }

// IndexURL is the URL of the index.
func (s *Server) IndexURL() string { return s.URL() + IndexPath }

// CAFile is the PEM file of the registry's CA.
func (s *Server) CAFile() string { return s.pki.CACert() }

// CAPool is a pool holding only the registry's CA.
func (s *Server) CAPool() *x509.CertPool {
	pool := x509.NewCertPool()
	if b, err := os.ReadFile(s.CAFile()); err == nil {
		pool.AppendCertsFromPEM(b)
	}
	return pool
}

// Transport is the default registry transport trusting this registry's CA.
func (s *Server) Transport() contract.Transport {
	t := contract.DefaultTransport()
	t.CABundleFile = s.CAFile()
	return t
}

// AddArchive publishes a Pack archive as publisher/name/version, read from its pack.yaml; the
// publisher is Declared unless set otherwise. It bumps the serial.
func (s *Server) AddArchive(archive []byte) error {
	a, err := pack.Read(archive, "pack.zip")
	if err != nil {
		return err
	}
	m := a.Manifest.Metadata
	return s.addVersion(&version{publisher: m.Publisher, source: m.Name, version: m.Version,
		displayName: m.DisplayName, description: m.Description, archive: archive})
}

// AddArchiveAs publishes archive as publisher/source/version whatever its pack.yaml says: a
// registry that lists one Pack and serves another, with digests that match what it serves.
func (s *Server) AddArchiveAs(publisher, source, ver string, archive []byte) error {
	return s.addVersion(&version{publisher: publisher, source: source, version: ver, archive: archive})
}

func (s *Server) addVersion(v *version) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.versions[v.publisher+"/"+v.source+"/"+v.version] = v
	if _, ok := s.statuses[v.publisher]; !ok {
		s.statuses[v.publisher] = contract.Declared
	}
	return s.publishLocked()
}

// SetPublisherStatus asserts status for publisher in its shard and bumps the serial.
func (s *Server) SetPublisherStatus(publisher string, status contract.PublisherStatus) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.statuses[publisher] = status
	s.pinned[publisher] = true
	return s.publishLocked()
}

// Revoke asserts Revoked for publisher.
func (s *Server) Revoke(publisher string) error {
	return s.SetPublisherStatus(publisher, contract.Revoked)
}

// SetCatalogLatest flags exactly one version of a Source as the catalog's latest.
func (s *Server) SetCatalogLatest(publisher, source, ver string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, v := range s.versions {
		if v.publisher == publisher && v.source == source {
			v.catalogLatest = v.version == ver
		}
	}
	return s.publishLocked()
}

// ChangeDigest republishes a version with a different archive (the same content, another zip
// comment), so its manifest and archive digests change; the serial grows.
func (s *Server) ChangeDigest(publisher, source, ver string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	v := s.versions[publisher+"/"+source+"/"+ver]
	if v == nil {
		return fmt.Errorf("no version %s/%s %s", publisher, source, ver)
	}
	changed, err := recomment(v.archive, fmt.Sprintf("changed at serial %d", s.serial+1))
	if err != nil {
		return err
	}
	v.archive = changed
	return s.publishLocked()
}

// Republish bumps the serial with no other change.
func (s *Server) Republish() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.publishLocked()
}

// ServeOlderIndex serves the current documents under an index whose serial is one lower than
// the current one (a rollback), until ServeCurrentIndex.
func (s *Server) ServeOlderIndex() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	idx, err := s.indexLocked(s.serial - 1)
	if err != nil {
		return err
	}
	s.olderIndex = idx
	return nil
}

// ServeCurrentIndex ends ServeOlderIndex.
func (s *Server) ServeCurrentIndex() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.olderIndex = nil
}

// Serial is the current publication's serial.
func (s *Server) Serial() int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.serial
}

// Document is the current body of path ("" when none).
func (s *Server) Document(path string) []byte {
	s.mu.Lock()
	defer s.mu.Unlock()
	if b, ok := s.overrides[path]; ok {
		return b
	}
	return s.docs[path]
}

// Override serves body at path instead of what the registry built (nil removes the override).
func (s *Server) Override(path string, body []byte) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if body == nil {
		delete(s.overrides, path)
		return
	}
	s.overrides[path] = body
}

// Redirect answers path with a 302 to location (a path on this origin or an absolute URL).
func (s *Server) Redirect(path, location string) { s.setBehaviour(path, behaviour{redirect: location}) }

// Hang never answers path (until Close or the client gives up).
func (s *Server) Hang(path string) { s.setBehaviour(path, behaviour{hang: true}) }

// Trickle sends path's body one byte every interval.
func (s *Server) Trickle(path string, interval time.Duration) {
	s.setBehaviour(path, behaviour{trickle: interval})
}

// Endless answers path with a body that never ends.
func (s *Server) Endless(path string) { s.setBehaviour(path, behaviour{endless: true}) }

// Behave ends every misbehaviour of path.
func (s *Server) Behave(path string) { s.setBehaviour(path, behaviour{}) }

func (s *Server) setBehaviour(path string, b behaviour) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.behaviours[path] = b
}

// RequireBearer answers 401 to requests without Authorization: Bearer token ("" ends it).
func (s *Server) RequireBearer(token string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.token = token
}

// Requests is how many requests path received.
func (s *Server) Requests(path string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.requests[path]
}

// BodyBytes is how many body bytes were sent for path.
func (s *Server) BodyBytes(path string) int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.bodyBytes[path]
}

// Authorizations are the Authorization headers path received, in order ("" for none).
func (s *Server) Authorizations(path string) []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.auth[path]...)
}

// publishLocked rebuilds every document with the next serial.
func (s *Server) publishLocked() error {
	s.serial++
	if s.dir != "" {
		// A folder registry outlives its process: a serial from the clock keeps growing across
		// restarts, so a platform that saw an earlier run never takes a restart for a rollback.
		s.serial = max(s.serial, time.Now().Unix())
	}
	s.published = time.Now().UTC().Truncate(time.Second)
	docs := map[string][]byte{}
	byPublisher := map[string][]*version{}
	for _, v := range s.versions {
		byPublisher[v.publisher] = append(byPublisher[v.publisher], v)
	}
	publishers := make([]string, 0, len(s.statuses))
	for p := range s.statuses {
		publishers = append(publishers, p)
	}
	sort.Strings(publishers)
	for _, p := range publishers {
		shard := contract.Shard{APIVersion: contract.APIVersion, Kind: contract.KindShard, Name: p,
			Publishers: []contract.Publisher{{Name: p, Status: s.statuses[p]}}, Sources: []contract.Source{}}
		vs := byPublisher[p]
		sort.Slice(vs, func(i, j int) bool {
			if vs[i].source != vs[j].source {
				return vs[i].source < vs[j].source
			}
			return vs[i].version < vs[j].version
		})
		for _, v := range vs {
			archivePath := ArchivePath(v.publisher, v.source, v.version)
			m := contract.Manifest{APIVersion: contract.APIVersion, Kind: contract.KindManifest, Publisher: v.publisher,
				Source: v.source, Version: v.version,
				// Relative to the manifest, /manifests/<p>/<s>/<v>.json.
				Pack: contract.Pack{Location: "../../.." + archivePath, Digest: contract.Digest(v.archive), Size: int64(len(v.archive))}}
			mb, err := json.MarshalIndent(m, "", "  ")
			if err != nil {
				return err
			}
			manifestPath := ManifestPath(v.publisher, v.source, v.version)
			docs[manifestPath] = mb
			docs[archivePath] = v.archive
			sv := contract.SourceVersion{Version: v.version, Manifest: ".." + manifestPath, ManifestDigest: contract.Digest(mb),
				Compatibility:   contract.Compatibility{PackAPIVersions: contract.SupportedPackAPIVersions},
				IsCatalogLatest: v.catalogLatest}
			if n := len(shard.Sources); n > 0 && shard.Sources[n-1].Name == v.source {
				shard.Sources[n-1].Versions = append(shard.Sources[n-1].Versions, sv)
				continue
			}
			shard.Sources = append(shard.Sources, contract.Source{Publisher: p, Name: v.source, DisplayName: v.displayName,
				Description: v.description, Versions: []contract.SourceVersion{sv}})
		}
		sb, err := json.MarshalIndent(shard, "", "  ")
		if err != nil {
			return err
		}
		docs[ShardPath(p)] = sb
	}
	s.docs = docs
	idx, err := s.indexLocked(s.serial)
	if err != nil {
		return err
	}
	s.docs[IndexPath] = idx
	return nil
}

func (s *Server) indexLocked(serial int64) ([]byte, error) {
	idx := contract.Index{APIVersion: contract.APIVersion, Kind: contract.KindIndex, Serial: serial, Shards: []contract.ShardRef{}}
	var paths []string
	for p := range s.docs {
		if strings.HasPrefix(p, "/shards/") {
			paths = append(paths, p)
		}
	}
	sort.Strings(paths)
	for _, p := range paths {
		name := strings.TrimSuffix(strings.TrimPrefix(p, "/shards/"), ".json")
		// Relative to the index, /index.json.
		idx.Shards = append(idx.Shards, contract.ShardRef{Name: name, Location: "shards/" + name + ".json", Digest: contract.Digest(s.docs[p])})
	}
	return json.MarshalIndent(idx, "", "  ")
}

func (s *Server) serve(w http.ResponseWriter, r *http.Request) {
	path := r.URL.Path
	if path == IndexPath {
		if err := s.reloadDir(false); err != nil {
			http.Error(w, "the registry folder cannot be read", http.StatusInternalServerError)
			return
		}
	}
	s.mu.Lock()
	s.requests[path]++
	s.auth[path] = append(s.auth[path], r.Header.Get("Authorization"))
	b := s.behaviours[path]
	body, ok := s.overrides[path]
	if !ok {
		body, ok = s.docs[path]
		if path == IndexPath && s.olderIndex != nil {
			body = s.olderIndex
		}
	}
	token, published := s.token, s.published
	s.mu.Unlock()

	switch {
	case r.Method != http.MethodGet && r.Method != http.MethodHead:
		http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
		return
	case token != "" && r.Header.Get("Authorization") != "Bearer "+token:
		http.Error(w, "unauthorized", http.StatusUnauthorized)
		return
	case b.hang:
		select {
		case <-r.Context().Done():
		case <-s.done:
		}
		return
	case b.redirect != "":
		http.Redirect(w, r, b.redirect, http.StatusFound)
		return
	case b.endless:
		w.Header().Set("Content-Type", "application/json")
		chunk := bytes.Repeat([]byte(" "), 32<<10)
		for {
			n, err := w.Write(chunk)
			s.count(path, n)
			if err != nil {
				return
			}
		}
	case !ok:
		http.NotFound(w, r)
		return
	}
	etag := `"` + strings.TrimPrefix(contract.Digest(body), "sha256:")[:32] + `"`
	w.Header().Set("ETag", etag)
	w.Header().Set("Last-Modified", published.Format(http.TimeFormat))
	if strings.HasSuffix(path, ".zip") {
		w.Header().Set("Content-Type", "application/zip")
	} else {
		w.Header().Set("Content-Type", "application/json")
	}
	if notModified(r, etag, published) {
		w.WriteHeader(http.StatusNotModified)
		return
	}
	if b.trickle > 0 {
		w.Header().Set("Content-Length", fmt.Sprint(len(body)))
		rc := http.NewResponseController(w)
		for i := range body {
			n, err := w.Write(body[i : i+1])
			s.count(path, n)
			_ = rc.Flush()
			if err != nil {
				return
			}
			select {
			case <-time.After(b.trickle):
			case <-r.Context().Done():
				return
			case <-s.done:
				return
			}
		}
		return
	}
	n, _ := w.Write(body)
	s.count(path, n)
}

func notModified(r *http.Request, etag string, published time.Time) bool {
	if inm := r.Header.Get("If-None-Match"); inm != "" {
		for _, t := range strings.Split(inm, ",") {
			if t = strings.TrimSpace(t); t == etag || t == "*" {
				return true
			}
		}
		return false
	}
	if ims := r.Header.Get("If-Modified-Since"); ims != "" {
		t, err := http.ParseTime(ims)
		return err == nil && !published.After(t)
	}
	return false
}

func (s *Server) count(path string, n int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.bodyBytes[path] += int64(n)
}

// recomment rewrites a zip archive with another comment: the same entries, other bytes.
func recomment(archive []byte, comment string) ([]byte, error) {
	zr, err := zip.NewReader(bytes.NewReader(archive), int64(len(archive)))
	if err != nil {
		return nil, err
	}
	var out bytes.Buffer
	zw := zip.NewWriter(&out)
	for _, f := range zr.File {
		if err := zw.Copy(f); err != nil {
			return nil, err
		}
	}
	if err := zw.SetComment(comment); err != nil {
		return nil, err
	}
	if err := zw.Close(); err != nil {
		return nil, err
	}
	return out.Bytes(), nil
}

// Archive builds a small valid Pack archive publisher/name at version (one ModelProvider), for
// tests that need Packs to publish.
func Archive(publisher, name, ver string) ([]byte, error) {
	m := pack.Manifest{Metadata: pack.ManifestMetadata{Publisher: publisher, Name: name, Version: ver,
		DisplayName: name, Description: "A test Pack"}, Definition: pack.ManifestDefinition{}}
	files := []pack.File{{Path: "model-providers/offline.yaml", Object: map[string]any{
		"apiVersion": "platform/v1", "kind": "ModelProvider", "metadata": map[string]any{"name": "offline"},
		"definition": map[string]any{"type": "Deterministic", "displayName": "Offline"}}}}
	return pack.Write(m, "", files)
}
