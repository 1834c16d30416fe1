package service_test

import (
	"bytes"
	"context"
	"errors"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"syscall"
	"testing"

	"github.com/go-logr/logr"
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
	"platform.dev/platform/internal/logging"
)

// A store that cannot be reached (a database restarting) is a 503 with Retry-After, which a
// client retries, not a 500; /readyz says what does not answer while /livez stays up.
func TestAnUnreachableStoreIsA503WithRetryAfterAndReadinessSaysWhy(t *testing.T) {
	g := NewWithT(t)
	ws := &corev1.Namespace{}
	ws.Name = "ws"
	refused := &net.OpError{Op: "dial", Net: "tcp", Err: syscall.ECONNREFUSED}
	unreachable := fake.NewClientBuilder().WithScheme(platformscheme.Scheme).WithObjects(ws).WithInterceptorFuncs(interceptor.Funcs{
		Get: func(ctx context.Context, cl client.WithWatch, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
			if _, ok := obj.(*platformv1.Agent); ok {
				return refused
			}
			return cl.Get(ctx, key, obj, opts...)
		},
	}).Build()
	api, err := service.New(httpapi.Options{
		Config: config.FromMap(config.Testing, map[string]string{"Platform:Authentication:Mode": "Development"}),
		Kube:   unreachable,
		Ready:  func(context.Context) error { return errors.New("the SQL store does not answer") },
		Log:    logr.Discard(),
	})
	g.Expect(err).NotTo(HaveOccurred())
	server := httptest.NewServer(api.Handler())
	t.Cleanup(server.Close)

	r := call(t, server, http.MethodGet, "/api/agents/helper", "", "X-Platform-Workspace", "ws")
	g.Expect(r.status).To(Equal(http.StatusServiceUnavailable), r.raw)
	g.Expect(r.header.Get("Retry-After")).To(Equal(httpapi.RetryAfterSeconds))
	g.Expect(r.raw).NotTo(ContainSubstring("refused"), "the cause is the log's")

	r = call(t, server, http.MethodGet, "/readyz", "")
	g.Expect(r.status).To(Equal(http.StatusServiceUnavailable), r.raw)
	g.Expect(r.body).To(HaveKeyWithValue("detail", "not ready: the SQL store does not answer"))
	g.Expect(r.header.Get("Retry-After")).NotTo(BeEmpty())
	g.Expect(call(t, server, http.MethodGet, "/livez", "").status).To(Equal(http.StatusOK))
}

// Every request refused while the database restarts is a 503, but the log says it once (then
// once per period with a count), not once per request with a stack each.
func TestRequestsRefusedWhileTheStoreIsUnreachableAreLoggedOnceNotEach(t *testing.T) {
	g := NewWithT(t)
	ws := &corev1.Namespace{}
	ws.Name = "ws"
	refused := &net.OpError{Op: "dial", Net: "tcp", Err: syscall.ECONNREFUSED}
	unreachable := fake.NewClientBuilder().WithScheme(platformscheme.Scheme).WithObjects(ws).WithInterceptorFuncs(interceptor.Funcs{
		Get: func(ctx context.Context, cl client.WithWatch, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
			if _, ok := obj.(*platformv1.Agent); ok {
				return refused
			}
			return cl.Get(ctx, key, obj, opts...)
		},
	}).Build()
	var log bytes.Buffer
	api, err := service.New(httpapi.Options{
		Config: config.FromMap(config.Testing, map[string]string{"Platform:Authentication:Mode": "Development"}),
		Kube:   unreachable,
		Ready:  func(context.Context) error { return nil },
		Log:    logging.Logger(logging.Warn, &log),
	})
	g.Expect(err).NotTo(HaveOccurred())
	server := httptest.NewServer(api.Handler())
	t.Cleanup(server.Close)

	for range 200 {
		r := call(t, server, http.MethodGet, "/api/agents/helper", "", "X-Platform-Workspace", "ws")
		g.Expect(r.status).To(Equal(http.StatusServiceUnavailable), r.raw)
	}
	lines := strings.Split(strings.TrimSpace(log.String()), "\n")
	g.Expect(lines).To(HaveLen(1), "one line for 200 refusals:\n%s", log.String())
	g.Expect(lines[0]).To(And(ContainSubstring(`"msg":"request failed"`), ContainSubstring(`"status":503`),
		ContainSubstring("connection refused"), ContainSubstring(`"outage":"the SQL store does not answer`)))
	g.Expect(lines[0]).NotTo(ContainSubstring("stacktrace"))
}
