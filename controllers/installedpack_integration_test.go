package controllers_test

import (
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/events"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	platformv1 "platform.dev/platform/apis/platform/v1"
	"platform.dev/platform/apiserver/packs/packstest"
	"platform.dev/platform/controllers/installedpack"
	"platform.dev/platform/controllers/workspace"
	"platform.dev/platform/internal/pack"
	"platform.dev/platform/internal/resourcenamespace"
)

var _ = Describe("InstalledPack", func() {
	helloPack := func(version, instructions string) packstest.Pack {
		return packstest.Pack{Publisher: "acme", Name: "hello", Version: version, Resources: map[string]string{
			"agents/greeter.yaml": packstest.Agent("greeter", instructions),
			"flows/greet.yaml":    packstest.Flow("greet", "greeter"),
			"entries/hello.yaml":  packstest.Entry("hello", "greeter"),
		}}
	}
	// install stores the archive and asks for it, as the service API does.
	install := func(ws string, p packstest.Pack) *platformv1.InstalledPack {
		GinkgoHelper()
		digest, err := packArchives.PutArchive(ctx, p.Zip())
		Expect(err).NotTo(HaveOccurred())
		ip := &platformv1.InstalledPack{}
		err = k8sClient.Get(ctx, client.ObjectKey{Namespace: ws, Name: p.Publisher + "." + p.Name}, ip)
		now := metav1.NewTime(time.Now())
		if apierrors.IsNotFound(err) {
			ip = &platformv1.InstalledPack{ObjectMeta: metav1.ObjectMeta{Namespace: ws, Name: p.Publisher + "." + p.Name},
				Definition: platformv1.InstalledPackDefinition{Publisher: platformv1.PackName(p.Publisher), Name: platformv1.PackName(p.Name),
					Version: platformv1.SemanticVersion(p.Version), Source: platformv1.PackSource{Kind: platformv1.UploadPackSource, Digest: digest},
					ArchiveDigest: digest, RequestedAt: &now}}
			Expect(k8sClient.Create(ctx, ip)).To(Succeed())
			return ip
		}
		Expect(err).NotTo(HaveOccurred())
		update(ip, func() {
			ip.Definition.Version, ip.Definition.ArchiveDigest, ip.Definition.Source.Digest = platformv1.SemanticVersion(p.Version), digest, digest
			ip.Definition.RequestedAt = &now
		})
		return ip
	}
	// expectState waits until the operation of the current generation ended in state.
	expectState := func(ip *platformv1.InstalledPack, state platformv1.PackInstallState) {
		GinkgoHelper()
		Eventually(func(g Gomega) {
			g.Expect(k8sClient.Get(ctx, client.ObjectKeyFromObject(ip), ip)).To(Succeed())
			g.Expect(ip.Status.Operation).NotTo(BeNil())
			g.Expect(ip.Status.Operation.Generation).To(Equal(ip.Generation))
			g.Expect(ip.Status.State).To(Equal(state), "%+v", ip.Status.Operation)
		}).Should(Succeed())
	}
	packNamespace := func(ws string) string {
		return resourcenamespace.KubeName(ws, "acme.hello")
	}

	It("installs the resources into the Pack's namespace in install order, each owned and fingerprinted, and never adds its Entries to home", func() {
		ws := newWorkspace()
		ip := install(ws, helloPack("1.0.0", "Say hello."))
		expectState(ip, platformv1.PackInstalled)
		Expect(ip.Status.Operation.Phase).To(Equal(platformv1.PackOperationDone))
		var order []string
		for _, s := range ip.Status.Operation.Steps {
			order = append(order, string(s.Kind)+"/"+string(s.Name))
			Expect(s.Done).To(BeTrue())
		}
		Expect(order).To(Equal([]string{"Agent/greeter", "Flow/greet", "Entry/hello"}))
		Expect(ip.Status.InstalledVersion).To(BeEquivalentTo("1.0.0"))
		Expect(ip.Status.Resources).To(HaveLen(3))
		kns := packNamespace(ws)
		agent := &platformv1.Agent{}
		Expect(k8sClient.Get(ctx, client.ObjectKey{Namespace: kns, Name: "greeter"}, agent)).To(Succeed())
		Expect(agent.Labels).To(HaveKeyWithValue(pack.PackLabel, "acme.hello"))
		Expect(agent.Annotations).To(HaveKeyWithValue(pack.VersionAnnotation, "1.0.0"))
		Expect(agent.Annotations).To(HaveKeyWithValue(pack.FingerprintAnnotation, string(ip.Status.Resources[0].Fingerprint)))
		for _, m := range ip.Status.Resources {
			Expect(m.MatchesInstalled).To(BeTrue())
			Expect(m.SuppliedByVersion).To(BeEquivalentTo("1.0.0"))
		}
		By("the workspace's home Dashboard does not list the Pack's Entry")
		Consistently(func(g Gomega) {
			home := &platformv1.Dashboard{}
			if err := k8sClient.Get(ctx, client.ObjectKey{Namespace: ws, Name: workspace.HomeDashboard}, home); err == nil {
				for _, e := range home.Definition.Entries {
					g.Expect(string(e.Namespace)).NotTo(Equal("acme.hello"))
				}
			}
		}, time.Second).Should(Succeed())
	})

	It("journals each step once and ends Installed while a second replica's reconciler (a deposed leader still running) works on the same installation", func() {
		ws := newWorkspace()
		// The second replica's reconciler, apart from the manager's: its own cache of archives,
		// the same kube API.
		second := &installedpack.Reconciler{Client: platformClient, Recorder: events.NewFakeRecorder(100), Archives: packArchives, Reader: platformClient}
		key := client.ObjectKey{Namespace: ws, Name: "acme.hello"}
		stop := make(chan struct{})
		failed := make(chan error, 100)
		done := make(chan struct{})
		go func() {
			defer GinkgoRecover()
			defer close(done)
			for {
				select {
				case <-stop:
					return
				default:
				}
				// A conflict with the other replica's write is the journal refusing a stale step:
				// the reconciler drops it, as after losing a race for the status.
				if _, err := second.Reconcile(ctx, ctrl.Request{NamespacedName: key}); err != nil && !apierrors.IsConflict(err) && !apierrors.IsAlreadyExists(err) {
					select {
					case failed <- err:
					default:
					}
				}
				time.Sleep(5 * time.Millisecond)
			}
		}()
		ip := install(ws, helloPack("1.0.0", "Say hello."))
		expectState(ip, platformv1.PackInstalled)
		close(stop)
		<-done
		Expect(failed).NotTo(Receive(), "the second replica's reconciles failed only by losing a race")
		Expect(ip.Status.Operation.Phase).To(Equal(platformv1.PackOperationDone))
		var order []string
		for _, s := range ip.Status.Operation.Steps {
			order = append(order, string(s.Kind)+"/"+string(s.Name))
			Expect(s.Done).To(BeTrue())
		}
		Expect(order).To(Equal([]string{"Agent/greeter", "Flow/greet", "Entry/hello"}), "each step journaled once, in order")
		Expect(ip.Status.Resources).To(HaveLen(3))
		for _, m := range ip.Status.Resources {
			Expect(m.MatchesInstalled).To(BeTrue(), "%s/%s", m.Kind, m.Name)
		}
	})

	It("resolves an installed Entry's Flow in the Pack's namespace, not the workspace's", func() {
		ws := newWorkspace()
		p := helloPack("1.0.0", "Say hello.")
		p.Resources["entries/hello.yaml"] = strings.Replace(packstest.Entry("hello", "greeter"), "    agent:\n      name: greeter\n", "    flow:\n      name: greet\n", 1)
		ip := install(ws, p)
		expectState(ip, platformv1.PackInstalled)
		entry := &platformv1.Entry{ObjectMeta: metav1.ObjectMeta{Namespace: packNamespace(ws), Name: "hello"}}
		expectReady(entry, metav1.ConditionTrue, platformv1.ResolvedReason)
	})

	It("recomputes matchesInstalled from the live fingerprint when a person changes a resource", func() {
		ws := newWorkspace()
		ip := install(ws, helloPack("1.0.0", "Say hello."))
		expectState(ip, platformv1.PackInstalled)
		agent := &platformv1.Agent{ObjectMeta: metav1.ObjectMeta{Namespace: packNamespace(ws), Name: "greeter"}}
		update(agent, func() { agent.Definition.Instructions = "Say hi." })
		Eventually(func(g Gomega) {
			g.Expect(k8sClient.Get(ctx, client.ObjectKeyFromObject(ip), ip)).To(Succeed())
			g.Expect(ip.Status.Resources[0].Name).To(BeEquivalentTo("greeter"))
			g.Expect(ip.Status.Resources[0].MatchesInstalled).To(BeFalse())
			g.Expect(ip.Status.Resources[1].MatchesInstalled).To(BeTrue())
		}).Should(Succeed())
	})

	It("updates in place, retains the previous version, and rolls back to it", func() {
		ws := newWorkspace()
		ip := install(ws, helloPack("1.0.0", "Say hello."))
		expectState(ip, platformv1.PackInstalled)
		agent := &platformv1.Agent{}
		Expect(k8sClient.Get(ctx, client.ObjectKey{Namespace: packNamespace(ws), Name: "greeter"}, agent)).To(Succeed())
		uid := agent.UID

		v2 := helloPack("1.1.0", "Say hello warmly.")
		delete(v2.Resources, "entries/hello.yaml")
		install(ws, v2)
		expectState(ip, platformv1.PackInstalled)
		Expect(ip.Status.InstalledVersion).To(BeEquivalentTo("1.1.0"))
		Expect(ip.Status.RetainedVersion).To(BeEquivalentTo("1.0.0"))
		Expect(ip.Status.Operation.Kind).To(Equal(platformv1.PackOperationUpdate))
		Expect(k8sClient.Get(ctx, client.ObjectKey{Namespace: packNamespace(ws), Name: "greeter"}, agent)).To(Succeed())
		Expect(agent.UID).To(Equal(uid), "updated in place, not replaced")
		Expect(agent.Definition.Instructions).To(Equal("Say hello warmly."))
		Expect(apierrors.IsNotFound(k8sClient.Get(ctx, client.ObjectKey{Namespace: packNamespace(ws), Name: "hello"}, &platformv1.Entry{}))).To(BeTrue(),
			"the Entry 1.1.0 no longer supplies is removed")
		for _, m := range ip.Status.Resources {
			if m.Kind == "Flow" {
				Expect(m.SuppliedByVersion).To(BeEquivalentTo("1.0.0"), "an unchanged resource keeps the version that supplied it")
			}
		}

		By("rolling back: the retained archive is the desired one again")
		retained := ip.Status.RetainedDigest
		now := metav1.NewTime(time.Now())
		update(ip, func() {
			ip.Definition.ArchiveDigest, ip.Definition.Version, ip.Definition.RequestedAt = retained, ip.Status.RetainedVersion, &now
		})
		expectState(ip, platformv1.PackInstalled)
		Expect(ip.Status.InstalledVersion).To(BeEquivalentTo("1.0.0"))
		Expect(ip.Status.RetainedVersion).To(BeEquivalentTo("1.1.0"))
		Expect(k8sClient.Get(ctx, client.ObjectKey{Namespace: packNamespace(ws), Name: "hello"}, &platformv1.Entry{})).To(Succeed())
	})

	It("compensates the done steps in reverse order when a step fails, and names the failing resource", func() {
		ws := newWorkspace()
		p := helloPack("1.0.0", "Say hello.")
		// The kube API refuses this Flow (annotations over its metadata limit): its step fails
		// after the Agent's.
		p.Resources["flows/greet.yaml"] = packstest.Oversized("Flow", "greet")
		ip := install(ws, p)
		expectState(ip, platformv1.PackRolledBack)
		op := ip.Status.Operation
		Expect(op.Phase).To(Equal(platformv1.PackOperationFailed))
		Expect(op.FailedResource).To(Equal("Flow/greet"))
		Expect(op.Error).NotTo(BeEmpty())
		Expect(op.Steps[0].Done).To(BeTrue())
		Expect(op.Steps[0].Compensated).To(BeTrue())
		Expect(apierrors.IsNotFound(k8sClient.Get(ctx, client.ObjectKey{Namespace: packNamespace(ws), Name: "greeter"}, &platformv1.Agent{}))).To(BeTrue(),
			"the Agent the failed install created is gone")
		expectReady(ip, metav1.ConditionFalse, platformv1.InstallFailedReason)
	})

	It("refuses to touch a resource of the same name that the Pack does not own", func() {
		ws := newWorkspace()
		kns, err := resourcenamespace.Ensure(ctx, k8sClient, ws, "acme.hello")
		Expect(err).NotTo(HaveOccurred())
		mine := &platformv1.Agent{ObjectMeta: metav1.ObjectMeta{Namespace: kns, Name: "greeter"},
			Definition: platformv1.AgentDefinition{Handler: "chat", Instructions: "Mine."}}
		Expect(k8sClient.Create(ctx, mine)).To(Succeed())
		ip := install(ws, helloPack("1.0.0", "Say hello."))
		expectState(ip, platformv1.PackRolledBack)
		Expect(ip.Status.Operation.Error).To(ContainSubstring("not owned by this Pack"))
		Expect(ip.Status.Operation.Steps).To(BeEmpty(), "a conflict is found before any write")
		Expect(k8sClient.Get(ctx, client.ObjectKeyFromObject(mine), mine)).To(Succeed())
		Expect(mine.Definition.Instructions).To(Equal("Mine."))
		Expect(mine.Labels).NotTo(HaveKey(pack.PackLabel))
	})

	It("uninstalls what is still managed and unchanged, preserves a modified resource, and goes Degraded listing it", func() {
		ws := newWorkspace()
		ip := install(ws, helloPack("1.0.0", "Say hello."))
		expectState(ip, platformv1.PackInstalled)
		agent := &platformv1.Agent{ObjectMeta: metav1.ObjectMeta{Namespace: packNamespace(ws), Name: "greeter"}}
		update(agent, func() { agent.Definition.Instructions = "Mine now." })
		update(ip, func() { ip.Definition.Uninstall = true })
		expectState(ip, platformv1.PackDegraded)
		Expect(ip.Status.Preserved).To(ConsistOf(platformv1.PreservedResource{Kind: "Agent", Name: "greeter", Reason: "modified since installed"}))
		Expect(k8sClient.Get(ctx, client.ObjectKeyFromObject(agent), agent)).To(Succeed())
		Expect(agent.Definition.Instructions).To(Equal("Mine now."))
		Expect(apierrors.IsNotFound(k8sClient.Get(ctx, client.ObjectKey{Namespace: packNamespace(ws), Name: "greet"}, &platformv1.Flow{}))).To(BeTrue())
		Expect(apierrors.IsNotFound(k8sClient.Get(ctx, client.ObjectKey{Namespace: packNamespace(ws), Name: "hello"}, &platformv1.Entry{}))).To(BeTrue())
		expectReady(ip, metav1.ConditionFalse, platformv1.ResourcesPreservedReason)
	})

	It("uninstalls everything and deletes the record when nothing was modified", func() {
		ws := newWorkspace()
		ip := install(ws, helloPack("1.0.0", "Say hello."))
		expectState(ip, platformv1.PackInstalled)
		update(ip, func() { ip.Definition.Uninstall = true })
		Eventually(func() bool { return apierrors.IsNotFound(k8sClient.Get(ctx, client.ObjectKeyFromObject(ip), ip)) }).Should(BeTrue())
		for _, name := range []string{"greeter"} {
			Expect(apierrors.IsNotFound(k8sClient.Get(ctx, client.ObjectKey{Namespace: packNamespace(ws), Name: name}, &platformv1.Agent{}))).To(BeTrue())
		}
	})

	It("keeps an Entry that a Dashboard shows on uninstall unless removeDashboardReferences authorizes removing the reference", func() {
		ws := newWorkspace()
		ip := install(ws, helloPack("1.0.0", "Say hello."))
		expectState(ip, platformv1.PackInstalled)
		board := &platformv1.Dashboard{ObjectMeta: metav1.ObjectMeta{Namespace: ws, Name: "team"},
			Definition: platformv1.DashboardDefinition{DisplayName: "Team", Entries: []platformv1.DashboardEntryReference{{Namespace: "acme.hello", Name: "hello"}}}}
		Expect(k8sClient.Create(ctx, board)).To(Succeed())
		update(ip, func() { ip.Definition.Uninstall = true })
		expectState(ip, platformv1.PackDegraded)
		Expect(ip.Status.Preserved).To(ConsistOf(platformv1.PreservedResource{Kind: "Entry", Name: "hello", Reason: "referenced by Dashboard team"}))

		update(ip, func() { ip.Definition.RemoveDashboardReferences = true })
		Eventually(func() bool { return apierrors.IsNotFound(k8sClient.Get(ctx, client.ObjectKeyFromObject(ip), ip)) }).Should(BeTrue())
		Expect(k8sClient.Get(ctx, client.ObjectKeyFromObject(board), board)).To(Succeed())
		Expect(board.Definition.Entries).To(BeEmpty())
	})
})
