package service_test

import (
	"context"
	"encoding/json"
	"net/http"
	"testing"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"

	platformv1 "platform.dev/platform/apis/platform/v1"
	"platform.dev/platform/apiserver/store"
	"platform.dev/platform/apiserver/work"
	"platform.dev/platform/apiserver/workplace"
	"platform.dev/platform/controllers/installedpack"
	"platform.dev/platform/internal/resourcenamespace"
)

func TestAnUpdateThatRemovesAnEntryClosesItsIdleConversationsAndKeepsTheirMessages(t *testing.T) {
	g := NewWithT(t)
	var places *workplace.Store
	server, db := packServerWith(t, func(db *store.Store, r *installedpack.Reconciler) {
		places = workplace.NewStore(db, work.New(db), workplace.FileArtifacts{Dir: t.TempDir()})
		r.Interactions = places
	})
	ctx := context.Background()
	t.Cleanup(func() { call(t, server, http.MethodDelete, "/api/packs/acme/conversing", "") })
	installed := postArchive(t, server, "/api/packs", "application/zip", namedPack("conversing", "1.0.0", "Say hello.").Zip())
	g.Expect(installed.status).To(Equal(http.StatusCreated), installed.raw)

	ns := &corev1.Namespace{}
	g.Expect(kube.Get(ctx, client.ObjectKey{Name: "default"}, ns)).To(Succeed())
	open := func(text string) workplace.Interaction {
		i, _, err := places.Open(ctx, workplace.Opening{
			Context:        work.Context{WorkspaceID: resourcenamespace.WorkspaceIDOf(ns), Namespace: "default", PrincipalID: "someone"},
			EntryNamespace: "acme.conversing", EntryName: "hello", EntryGeneration: 1, Title: "Hello",
			Target:     workplace.FlowTarget{Namespace: "acme.conversing", Flow: "direct-greeter", Version: "1.0.0"},
			Submission: workplace.Submission{Text: text}, Submitted: json.RawMessage(`{}`),
		})
		g.Expect(err).NotTo(HaveOccurred())
		return i
	}
	idle, busy := open("Hello there"), open("Still working")
	// The end of its run makes a conversation Idle; no executor runs here.
	_, err := db.DB().ExecContext(ctx, db.Rebind(`UPDATE interactions SET state = ? WHERE id = ?`), workplace.InteractionIdle, idle.ID)
	g.Expect(err).NotTo(HaveOccurred())

	withoutEntry := namedPack("conversing", "1.1.0", "Say hello.")
	delete(withoutEntry.Resources, "entries/hello.yaml")
	updated := postArchive(t, server, "/api/packs", "application/zip", withoutEntry.Zip())
	g.Expect(updated.status).To(Equal(http.StatusOK), updated.raw)
	g.Expect(apierrors.IsNotFound(kube.Get(ctx, client.ObjectKey{Namespace: resourcenamespace.KubeName("default", "acme.conversing"), Name: "hello"},
		&platformv1.Entry{}))).To(BeTrue(), "the update removed the Entry")

	closed, err := places.Interaction(ctx, idle.WorkspaceID, idle.ID)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(closed.State).To(Equal(workplace.InteractionClosed))
	messages, err := places.Messages(ctx, idle.WorkspaceID, idle.ID, 0, 10)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(messages).To(ContainElement(HaveField("Text", "Hello there")), "a closed conversation keeps its history")
	working, err := places.Interaction(ctx, busy.WorkspaceID, busy.ID)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(working.State).To(Equal(workplace.InteractionActive), "a conversation whose run goes on is not eligible")
}
