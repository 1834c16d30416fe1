package service_test

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-logr/logr/funcr"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	platformscheme "platform.dev/platform/apis/platform/scheme"
	platformv1 "platform.dev/platform/apis/platform/v1"
	"platform.dev/platform/apiserver/httpapi"
	"platform.dev/platform/apiserver/httpapi/service"
	"platform.dev/platform/internal/config"
)

// Every answer of 500 writes one log line with the method, the route pattern and the cause, while
// the caller reads "internal error" and never the cause: whether the failure came from a
// handler or from the middleware that resolves the workspace.
func TestA5xxIsLoggedWithItsMethodRouteAndCause(t *testing.T) {
	const cause = "the management store lost its disk"
	for name, c := range map[string]struct {
		fails  func(client.Object) bool
		method string
		path   string
		route  string
	}{
		"a handler's failure": {
			fails:  func(o client.Object) bool { _, ok := o.(*platformv1.Agent); return ok },
			method: http.MethodGet, path: "/api/agents/helper", route: "GET /api/agents/{name}",
		},
		"a failure while the workspace is resolved": {
			fails:  func(o client.Object) bool { _, ok := o.(*corev1.Namespace); return ok },
			method: http.MethodDelete, path: "/api/flows/report", route: "DELETE /api/flows/{name}",
		},
	} {
		t.Run(name, func(t *testing.T) {
			g := NewWithT(t)
			server, logged := loggingServer(t, func(ctx context.Context, cl client.WithWatch, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
				if c.fails(obj) {
					return errors.New(cause)
				}
				return cl.Get(ctx, key, obj, opts...)
			})

			r := call(t, server, c.method, c.path, "", "X-Platform-Workspace", "ws", "If-Match", `"1"`)
			g.Expect(r.status).To(Equal(http.StatusInternalServerError), r.raw)
			g.Expect(r.raw).NotTo(ContainSubstring(cause))
			var failures []string
			for _, line := range logged() {
				if strings.Contains(line, "request failed") {
					failures = append(failures, line)
				}
			}
			g.Expect(failures).To(HaveLen(1), "%q", logged())
			g.Expect(failures[0]).To(And(ContainSubstring(`"method"="`+c.method+`"`), ContainSubstring(`"route"="`+c.route+`"`),
				ContainSubstring(cause), ContainSubstring(`"status"=500`)))
		})
	}
}

// A client that hangs up while its request is served (a page left while it loaded) is no server
// failure: no "request failed" line, whatever the abandoned handler answered.
func TestARequestItsClientAbandonedIsNotLoggedAsAFailure(t *testing.T) {
	g := NewWithT(t)
	server, logged := loggingServer(t, func(ctx context.Context, cl client.WithWatch, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
		if _, agent := obj.(*platformv1.Agent); agent {
			<-ctx.Done() // the store answers only once the caller gave up
			return ctx.Err()
		}
		return cl.Get(ctx, key, obj, opts...)
	})

	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, server.URL+"/api/agents/helper", nil)
	req.Header.Set("X-Platform-Workspace", "ws")
	_, err := http.DefaultClient.Do(req)
	g.Expect(err).To(HaveOccurred(), "the client gave up")
	// Once the abandoned handler has answered, its line says so.
	g.Eventually(logged).Should(ContainElement(Or(ContainSubstring("request abandoned by its client"), ContainSubstring("request failed"))))
	g.Expect(logged()).NotTo(ContainElement(ContainSubstring("request failed")))
}

// loggingServer is the service API over a fake kube API whose reads go through get (workspace
// "ws" exists), and the lines its log has written so far, V(1) included.
func loggingServer(t *testing.T, get func(context.Context, client.WithWatch, client.ObjectKey, client.Object, ...client.GetOption) error) (*httptest.Server, func() []string) {
	t.Helper()
	ws := &corev1.Namespace{}
	ws.Name = "ws"
	var (
		mu    sync.Mutex
		lines []string
	)
	logger := funcr.New(func(prefix, args string) {
		mu.Lock()
		defer mu.Unlock()
		lines = append(lines, prefix+" "+args)
	}, funcr.Options{Verbosity: 1})
	kube := fake.NewClientBuilder().WithScheme(platformscheme.Scheme).WithObjects(ws).WithInterceptorFuncs(interceptor.Funcs{Get: get}).Build()
	api, err := service.New(httpapi.Options{
		Config: config.FromMap(config.Testing, map[string]string{"Platform:Authentication:Mode": "Development"}),
		Kube:   kube,
		Ready:  func(context.Context) error { return nil },
		Log:    logger,
	})
	if err != nil {
		t.Fatal(err)
	}
	server := httptest.NewServer(api.Handler())
	t.Cleanup(server.Close)
	return server, func() []string {
		mu.Lock()
		defer mu.Unlock()
		return append([]string(nil), lines...)
	}
}
