package e2e

import (
	"context"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	platformv1 "platform.dev/platform/apis/platform/v1"
	workv1 "platform.dev/platform/apis/work/v1"
)

// The example suite of the Work plane in the kube API: what an integration suite of a team that
// builds on the platform writes with a controller-runtime client only. It applies a Flow and an
// Entry, submits work through the Entry, answers the question the work asks, and waits for its
// Task to complete by watching it, with no hand-written HTTP client for the Work plane.
const exampleManifests = `
apiVersion: platform.dev/v1
kind: Agent
metadata: {name: publisher, namespace: default}
definition:
  instructions: "@latencyMs 100\n@requestConfirmation Publish the report?"
---
apiVersion: platform.dev/v1
kind: Flow
metadata: {name: publish, namespace: default}
definition:
  flowKind: Direct
  version: 1.0.0
  publication: Automatic
  enabled: true
  target: {kind: Agent, id: publisher}
---
apiVersion: platform.dev/v1
kind: Entry
metadata: {name: publish, namespace: default}
definition:
  displayName: Publish a report
  publication: Automatic
  binding: {flow: {name: publish}}
  fields:
  - {name: title, role: PrimaryInput}
`

// TestExampleAControllerRuntimeClientWaitsForItsTaskToComplete is the example suite.
func TestExampleAControllerRuntimeClientWaitsForItsTaskToComplete(t *testing.T) {
	g := NewWithT(t)
	cs := &crashServer{t: t, dataDir: filepath.Join(t.TempDir(), "data")}
	service := cs.start()
	t.Cleanup(cs.stop)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()

	// The client: the platform's kinds and the Work plane's, from the kubeconfig serve wrote.
	cfg, err := clientcmd.BuildConfigFromFlags("", cs.current.Kubeconfig())
	g.Expect(err).NotTo(HaveOccurred())
	scheme := runtime.NewScheme()
	g.Expect(platformv1.AddToScheme(scheme)).To(Succeed())
	g.Expect(workv1.AddToScheme(scheme)).To(Succeed())
	kube, err := client.NewWithWatch(cfg, client.Options{Scheme: scheme})
	g.Expect(err).NotTo(HaveOccurred())

	// Apply the Agent, the Flow and the Entry; the Entry controller publishes it.
	var agent platformv1.Agent
	var flow platformv1.Flow
	var entry platformv1.Entry
	docs := strings.Split(exampleManifests, "\n---\n")
	for i, obj := range []client.Object{&agent, &flow, &entry} {
		g.Expect(yaml.UnmarshalStrict([]byte(docs[i]), obj)).To(Succeed())
		g.Eventually(func() error { return kube.Create(ctx, obj) }).WithTimeout(60 * time.Second).Should(Succeed())
	}
	g.Eventually(func() error {
		return kube.Get(ctx, client.ObjectKey{Namespace: "default", Name: "publish"}, &platformv1.PublishedEntry{})
	}).WithTimeout(60 * time.Second).Should(Succeed())

	// Submit work through the Entry (the service API; the kube API only reads the Work plane).
	opened := service.must(http.StatusCreated, http.MethodPost, "/api/workspaces/default/entries/publish/interactions",
		`{"input":{"title":"Q4 report"}}`)
	taskID := opened["interaction"].(map[string]any)["taskId"].(string)
	interactionID := opened["interaction"].(map[string]any)["id"].(string)

	// The Task and its conversation are kube objects: wait for the question.
	var task workv1.Task
	g.Eventually(func(g Gomega) {
		g.Expect(kube.Get(ctx, client.ObjectKey{Namespace: "default", Name: taskID}, &task)).To(Succeed())
		g.Expect(task.Status.State).To(Equal("action-required"))
	}).WithTimeout(60 * time.Second).Should(Succeed())
	g.Expect(task.Status.WaitingOn).To(Equal("Publish the report?"))
	var interaction workv1.Interaction
	g.Expect(kube.Get(ctx, client.ObjectKey{Namespace: "default", Name: interactionID}, &interaction)).To(Succeed())
	g.Expect(interaction.Status.PendingActions).To(HaveLen(1))
	question := interaction.Status.PendingActions[0]

	// Watch the Task from the version read, then answer: the watch sees it complete.
	w, err := kube.Watch(ctx, &workv1.TaskList{}, client.InNamespace("default"),
		client.MatchingFields{"metadata.name": taskID})
	g.Expect(err).NotTo(HaveOccurred())
	defer w.Stop()
	service.must(http.StatusOK, http.MethodPost, "/api/workspaces/default/interactions/"+interactionID+"/pending-actions/"+question.ID+"/responses",
		`{"resumeToken":"`+opened["resumeToken"].(string)+`","confirmed":true}`)
	for state := ""; state != "completed"; {
		select {
		case ev, ok := <-w.ResultChan():
			g.Expect(ok).To(BeTrue(), "the watch ended before the Task completed")
			g.Expect(ev.Type).NotTo(Equal(watch.Error), "%v", ev.Object)
			if t, isTask := ev.Object.(*workv1.Task); isTask && ev.Type != watch.Bookmark {
				state = t.Status.State
			}
		case <-ctx.Done():
			t.Fatal("the Task did not complete in time")
		}
	}
	var runs workv1.FlowRunList
	g.Expect(kube.List(ctx, &runs, client.InNamespace("default"), client.MatchingFields{"status.task": taskID})).To(Succeed())
	g.Expect(runs.Items).To(HaveLen(1))
	g.Expect(runs.Items[0].Status.State).To(Equal("Completed"))
}
