package service_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	goruntime "runtime"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	platformscheme "platform.dev/platform/apis/platform/scheme"
	platformv1 "platform.dev/platform/apis/platform/v1"
	"platform.dev/platform/apiserver/kubeauth"
)

// triggerBody is a Trigger of the active version of flow on schedule (its JSON), with extra
// definition fields.
func triggerBody(name, flow, schedule, extra string) string {
	return triggerBodyFor(name, `{"name":"`+flow+`"}`, schedule, extra)
}

// triggerBodyFor is triggerBody with the target's Flow reference in JSON.
func triggerBodyFor(name, flowReference, schedule, extra string) string {
	return `{"apiVersion":"platform/v1","kind":"Trigger","metadata":{"name":"` + name + `","tags":{"team":"reports"}},"definition":{` +
		`"displayName":"Weekly report","source":{"kind":"schedule","schedule":` + schedule + `},` +
		`"target":{"kind":"flow","flow":` + flowReference + `,"input":{"title":"Weekly"}}` + extra + `}}`
}

const weekdayMornings = `{"type":"cron","expression":"0 7 * * 1-5","timeZone":"Europe/Paris"}`

func TestTriggerRoutesWriteWithETagsToggleAndKeepTheirOwner(t *testing.T) {
	g := NewWithT(t)
	server := workServer(t, storeFor(t))
	flow := reportFlowSetup(t, server)
	name := "trigger-" + flow

	created := call(t, server, http.MethodPost, "/api/triggers", triggerBody(name, flow, weekdayMornings, ""))
	g.Expect(created.status).To(Equal(http.StatusCreated), "%v", created.body)
	etag := created.header.Get("ETag")
	g.Expect(created.body).To(HaveKeyWithValue("apiVersion", "platform/v1"))
	g.Expect(field(created.body, "status", "owner")).To(Equal("development"), "the caller owns what it creates")
	g.Expect(field(created.body, "status", "namespace")).To(Equal("default"))
	g.Expect(field(created.body, "definition", "misfirePolicy")).To(Equal("fireOnce"), "the CRD's defaults")
	g.Expect(field(created.body, "definition", "catchUpWindow")).To(Equal("01:00:00"))

	read := call(t, server, http.MethodGet, "/api/triggers/"+name, "")
	g.Expect(read.status).To(Equal(http.StatusOK))
	g.Expect(read.header.Get("ETag")).To(Equal(etag))
	namespaced := call(t, server, http.MethodGet, "/api/namespaces/default/triggers/"+name, "")
	g.Expect(namespaced.status).To(Equal(http.StatusOK), "the namespaced route reaches the default resource namespace")
	g.Expect(namespaced.header.Get("ETag")).To(Equal(etag))
	expectProblem(g, call(t, server, http.MethodGet, "/api/namespaces/acme.kit/triggers/"+name, ""), http.StatusNotFound)
	list := call(t, server, http.MethodGet, "/api/triggers", "")
	g.Expect(list.body["items"]).To(ContainElement(HaveKeyWithValue("metadata", HaveKeyWithValue("name", name))))

	// The owner annotation is the platform's: a body cannot choose one.
	spoofed := triggerBody(name, flow, weekdayMornings, "")
	spoofed = spoofed[:len(`{"apiVersion":"platform/v1","kind":"Trigger","metadata":{"name":"`+name+`",`)] +
		`"annotations":{"platform/owner":"someone-else"},` + spoofed[len(`{"apiVersion":"platform/v1","kind":"Trigger","metadata":{"name":"`+name+`",`):]
	replaced := call(t, server, http.MethodPut, "/api/triggers/"+name, spoofed, "If-Match", etag)
	g.Expect(replaced.status).To(Equal(http.StatusOK), "%v", replaced.body)
	g.Expect(field(replaced.body, "status", "owner")).To(Equal("development"))
	etag = replaced.header.Get("ETag")

	disabled := call(t, server, http.MethodPost, "/api/triggers/"+name+"/disable", "")
	g.Expect(disabled.status).To(Equal(http.StatusOK), "%v", disabled.body)
	g.Expect(field(disabled.body, "definition", "enabled")).To(BeFalse())
	g.Expect(disabled.header.Get("ETag")).NotTo(Equal(etag))
	again := call(t, server, http.MethodPost, "/api/triggers/"+name+"/disable", "")
	g.Expect(again.header.Get("ETag")).To(Equal(disabled.header.Get("ETag")), "disabling a disabled Trigger changes nothing")
	expectProblem(g, call(t, server, http.MethodPost, "/api/triggers/"+name+"/enable", "", "If-Match", etag), http.StatusPreconditionFailed)
	enabled := call(t, server, http.MethodPost, "/api/namespaces/default/triggers/"+name+"/enable", "", "If-Match", disabled.header.Get("ETag"))
	g.Expect(enabled.status).To(Equal(http.StatusOK), "%v", enabled.body)
	g.Expect(field(enabled.body, "definition", "enabled")).To(BeTrue())

	expectWritesNeedTheCurrentETag(t, server, "/api/triggers/"+name, enabled.header.Get("ETag"),
		triggerBody(name, flow, `{"type":"cron","expression":"0 8 * * 1-5","timeZone":"Europe/Paris"}`, ""))
}

func TestRunNowSubmitsAnAutonomousTaskWhoseQuestionIsAnsweredOnTheTask(t *testing.T) {
	g := NewWithT(t)
	server := workServer(t, storeFor(t))
	flow := reportFlowSetup(t, server)
	name := "run-" + flow
	r := call(t, server, http.MethodPost, "/api/triggers", triggerBody(name, flow, weekdayMornings, ""))
	g.Expect(r.status).To(Equal(http.StatusCreated), "%v", r.body)

	ran := call(t, server, http.MethodPost, "/api/triggers/"+name+"/run", "", "Idempotency-Key", "run-1-"+name)
	g.Expect(ran.status).To(Equal(http.StatusAccepted), "%v", ran.body)
	g.Expect(ran.body).To(HaveKeyWithValue("kind", "Manual"))
	g.Expect(ran.body).To(HaveKeyWithValue("outcome", "Submitted"))
	g.Expect(ran.body).To(HaveKeyWithValue("principalId", "development"))
	g.Expect(field(ran.body, "flow", "version")).To(Equal("1.0.0"))
	taskID := ran.body["taskId"].(string)
	g.Expect(field(call(t, server, http.MethodGet, "/api/triggers/"+name, "").body, "status", "lastOccurrence", "id")).To(Equal(ran.body["id"]),
		"the status shows a Run now at once (LAST), not at the scheduler's next reconcile")
	retried := call(t, server, http.MethodPost, "/api/triggers/"+name+"/run", "", "Idempotency-Key", "run-1-"+name)
	g.Expect(retried.status).To(Equal(http.StatusAccepted))
	g.Expect(retried.body["id"]).To(Equal(ran.body["id"]), "a retried Run now submits once")

	// The Work is an autonomous Task; its question is the Task's pending action, with a notification.
	const ws = "/api/workspaces/default"
	var item map[string]any
	g.Eventually(func(g Gomega) {
		task := call(t, server, http.MethodGet, ws+"/tasks/"+taskID, "")
		g.Expect(task.status).To(Equal(http.StatusOK))
		g.Expect(task.body).NotTo(HaveKey("interactionId"))
		g.Expect(task.body).To(HaveKeyWithValue("state", "action-required"))
		item = call(t, server, http.MethodGet, "/api/work/workitems/"+taskID, "").body
		g.Expect(item).To(HaveKey("pendingAction"))
	}).WithTimeout(20 * time.Second).Should(Succeed())
	notes := call(t, server, http.MethodGet, ws+"/notifications", "")
	g.Expect(notes.body["items"]).To(ContainElement(And(HaveKeyWithValue("kind", "question"), HaveKeyWithValue("taskId", taskID))))
	action := field(item, "pendingAction", "id").(string)
	answered := call(t, server, http.MethodPost, ws+"/tasks/"+taskID+"/pending-actions/"+action+"/responses", `{"value":"brief"}`)
	g.Expect(answered.status).To(Equal(http.StatusOK), "%v", answered.body)

	history := call(t, server, http.MethodGet, "/api/triggers/"+name+"/occurrences?limit=10", "")
	g.Expect(history.status).To(Equal(http.StatusOK), "%v", history.body)
	g.Expect(history.body["items"]).To(HaveLen(1))
	g.Expect(history.body["items"]).To(ContainElement(HaveKeyWithValue("taskId", taskID)))
	g.Expect(call(t, server, http.MethodGet, "/api/namespaces/default/triggers/"+name+"/occurrences", "").body["items"]).To(HaveLen(1))

	// A Trigger whose Flow was deleted records why it could not run.
	gone := "gone-" + flow
	r = call(t, server, http.MethodPost, "/api/triggers", triggerBody(gone, flow, weekdayMornings, ""))
	g.Expect(r.status).To(Equal(http.StatusCreated), "%v", r.body)
	current := &platformv1.Trigger{}
	g.Expect(kube.Get(context.Background(), keyIn("default", gone), current)).To(Succeed())
	current.Definition.Target.Flow.Version = "9.9.9"
	g.Expect(kube.Update(context.Background(), current)).To(MatchError(ContainSubstring("definition.target.flow.version")),
		"admission refuses a version that is not published")
	g.Expect(kube.Delete(context.Background(), &platformv1.Flow{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: flow}})).To(Succeed())
	failed := call(t, server, http.MethodPost, "/api/triggers/"+gone+"/run", "")
	expectProblem(g, failed, http.StatusConflict)
	g.Expect(failed.body["detail"]).To(ContainSubstring(platformv1.FlowNotFoundReason))
	g.Expect(call(t, server, http.MethodGet, "/api/triggers/"+gone+"/occurrences", "").body["items"]).To(
		ContainElement(HaveKeyWithValue("outcome", "Failed")), "the failed occurrence is recorded")
}

func TestBadTriggersAreRefusedWithTheFieldPathThroughTheAPIAndTheKubeAPI(t *testing.T) {
	server := workServer(t, storeFor(t))
	flow := reportFlowSetup(t, server)
	past := time.Now().Add(-48 * time.Hour).UTC().Format("2006-01-02T15:04:05")
	schedule := func(typ, expr, zone string) string {
		return fmt.Sprintf(`{"type":%q,"expression":%q,"timeZone":%q}`, typ, expr, zone)
	}
	cases := map[string]struct {
		schedule, flow, extra, location string
	}{
		"an unknown time zone":          {schedule("cron", "0 7 * * *", "Mars/Olympus"), flow, "", "body.definition.source.schedule.timeZone"},
		"an invalid cron expression":    {schedule("cron", "0 25 * * *", "UTC"), flow, "", "body.definition.source.schedule.expression"},
		"a cron with six fields":        {schedule("cron", "0 0 7 * * 1", "UTC"), flow, "", "body.definition.source.schedule.expression"},
		"an interval in another form":   {schedule("interval", "5m", "UTC"), flow, "", "body.definition.source.schedule.expression"},
		"a zero interval":               {schedule("interval", "00:00:00", "UTC"), flow, "", "body.definition.source.schedule.expression"},
		"a once instant in the past":    {schedule("once", past, "UTC"), flow, "", "body.definition.source.schedule.expression"},
		"an unknown schedule type":      {schedule("weekly", "x", "UTC"), flow, "", "body.definition.source.schedule.type"},
		"an unknown misfire policy":     {weekdayMornings, flow, `,"misfirePolicy":"sometimes"`, "body.definition.misfirePolicy"},
		"an unknown concurrency policy": {weekdayMornings, flow, `,"concurrencyPolicy":"queue"`, "body.definition.concurrencyPolicy"},
		"a catch-up window over a week": {weekdayMornings, flow, `,"catchUpWindow":"8.00:00:00"`, "body.definition.catchUpWindow"},
		"a jitter over an hour":         {weekdayMornings, flow, `,"jitter":"02:00:00"`, "body.definition.jitter"},
		"a target Flow that is missing": {weekdayMornings, "no-such-flow", "", "body.definition.target.flow.name"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			g := NewWithT(t)
			trigger := fmt.Sprintf("bad-%d-%s", time.Now().UnixNano()%1e6, flow)
			r := call(t, server, http.MethodPost, "/api/triggers", triggerBody(trigger, tc.flow, tc.schedule, tc.extra))
			expectProblem(g, r, http.StatusUnprocessableEntity)
			g.Expect(r.body["errors"]).To(ContainElement(HaveKeyWithValue("location", tc.location)), "%v", r.body)
			expectProblem(g, call(t, server, http.MethodGet, "/api/triggers/"+trigger, ""), http.StatusNotFound)
		})
	}
	t.Run("a target Flow in another workspace", func(t *testing.T) {
		g := NewWithT(t)
		other := "other-" + flow
		g.Expect(kube.Create(context.Background(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: other}})).To(Succeed())
		r := call(t, server, http.MethodPost, "/api/triggers", triggerBodyFor("elsewhere-"+flow, `{"name":"`+flow+`","namespace":"`+other+`"}`, weekdayMornings, ""))
		expectProblem(g, r, http.StatusUnprocessableEntity)
		g.Expect(r.body["errors"]).To(ContainElement(HaveKeyWithValue("location", "body.definition.target.flow.namespace")), "%v", r.body)
	})
	t.Run("through the kube API", func(t *testing.T) {
		g := NewWithT(t)
		tr := &platformv1.Trigger{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "kube-" + flow}, Definition: platformv1.TriggerDefinition{
			Source: platformv1.TriggerSource{Kind: platformv1.ScheduleTriggerSource, Schedule: &platformv1.TriggerSchedule{Type: platformv1.CronSchedule,
				Expression: "0 7 * * *", TimeZone: "Europe/Pariss"}},
			Target: platformv1.TriggerTarget{Kind: platformv1.FlowTriggerTarget, Flow: &platformv1.FlowReference{Name: "no-such-flow"}},
		}}
		err := kube.Create(context.Background(), tr)
		g.Expect(apierrors.IsInvalid(err)).To(BeTrue(), "%v", err)
		var fields []string
		for _, cause := range err.(apierrors.APIStatus).Status().Details.Causes {
			fields = append(fields, cause.Field)
		}
		g.Expect(fields).To(ConsistOf("definition.source.schedule.timeZone", "definition.target.flow.name"))
	})
}

// A Principal's write through the kube API makes it the owner of what it writes, and nothing else
// does: a metadata change keeps the owner, whatever annotation it carries.
func TestAPrincipalWritingThroughTheKubeAPIBecomesTheOwner(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	server := workServer(t, storeFor(t))
	flow := reportFlowSetup(t, server)
	as := func(principal string) client.Client {
		cfg := rest.CopyConfig(env.Config)
		cfg.Impersonate = rest.ImpersonationConfig{UserName: kubeauth.UserPrefix + principal, Groups: []string{"system:masters"},
			Extra: map[string][]string{kubeauth.ExtraPrincipalID: {principal}}}
		c, err := client.New(cfg, client.Options{Scheme: platformscheme.Scheme})
		g.Expect(err).NotTo(HaveOccurred())
		return c
	}
	alice, bob := as("alice"), as("bob")
	tr := &platformv1.Trigger{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "owned-" + flow,
		Annotations: map[string]string{platformv1.TriggerOwnerAnnotation: "mallory"}},
		Definition: platformv1.TriggerDefinition{
			Source: platformv1.TriggerSource{Kind: platformv1.ScheduleTriggerSource, Schedule: &platformv1.TriggerSchedule{Type: platformv1.IntervalSchedule,
				Expression: "01:00:00", TimeZone: "UTC"}},
			Target: platformv1.TriggerTarget{Kind: platformv1.FlowTriggerTarget, Flow: &platformv1.FlowReference{Name: platformv1.ResourceName(flow)},
				Input: &runtime.RawExtension{Raw: []byte(`{}`)}},
		}}
	g.Expect(alice.Create(ctx, tr)).To(Succeed())
	g.Expect(tr.Annotations).To(HaveKeyWithValue(platformv1.TriggerOwnerAnnotation, "alice"))

	tr.Labels = map[string]string{"team": "b"}
	tr.Annotations[platformv1.TriggerOwnerAnnotation] = "bob"
	g.Expect(bob.Update(ctx, tr)).To(Succeed())
	g.Expect(tr.Annotations).To(HaveKeyWithValue(platformv1.TriggerOwnerAnnotation, "alice"), "a metadata change keeps the owner")

	tr.Definition.Source.Schedule.Expression = "02:00:00"
	g.Expect(bob.Update(ctx, tr)).To(Succeed())
	g.Expect(tr.Annotations).To(HaveKeyWithValue(platformv1.TriggerOwnerAnnotation, "bob"), "who changes the definition owns it")

	// A caller that is no Principal (the administrator's certificate, the service API) keeps the
	// owner when it leaves the annotation out.
	delete(tr.Annotations, platformv1.TriggerOwnerAnnotation)
	tr.Definition.Source.Schedule.Expression = "03:00:00"
	g.Expect(kube.Update(ctx, tr)).To(Succeed())
	g.Expect(tr.Annotations).To(HaveKeyWithValue(platformv1.TriggerOwnerAnnotation, "bob"))
}

func TestAScheduleIsPreviewedWithTheDaylightSavingRules(t *testing.T) {
	g := NewWithT(t)
	server := workServer(t, storeFor(t))
	preview := func(body string) response {
		return call(t, server, http.MethodPost, "/api/triggers/preview", body)
	}
	r := preview(`{"schedule":{"type":"cron","expression":"30 2 * * *","timeZone":"Europe/Paris"},"count":3,"after":"2026-03-28T12:00:00Z"}`)
	g.Expect(r.status).To(Equal(http.StatusOK), "%v", r.body)
	var locals []any
	for _, i := range r.body["instants"].([]any) {
		locals = append(locals, i.(map[string]any)["local"])
	}
	g.Expect(locals).To(Equal([]any{"2026-03-29T03:00:00+02:00", "2026-03-30T02:30:00+02:00", "2026-03-31T02:30:00+02:00"}),
		"02:30 does not exist on the 29th: it fires when the gap ends")
	g.Expect(r.body["instants"].([]any)[0]).To(HaveKeyWithValue("at", "2026-03-29T01:00:00Z"))

	r = preview(`{"schedule":{"type":"interval","expression":"99999.00:00:00","timeZone":"UTC"},"count":100}`)
	g.Expect(r.status).To(Equal(http.StatusOK), "%v", r.body)
	g.Expect(len(r.body["instants"].([]any))).To(BeNumerically("<", 100), "no instant beyond what a timestamp spells")

	r = preview(`{"schedule":{"type":"interval","expression":"00:15:00","timeZone":"UTC"},"count":2,"after":"2026-01-01T00:00:00Z"}`)
	g.Expect(r.body["instants"]).To(ConsistOf(HaveKeyWithValue("at", "2026-01-01T00:15:00Z"), HaveKeyWithValue("at", "2026-01-01T00:30:00Z")))

	for body, location := range map[string]string{
		`{"schedule":{"type":"cron","expression":"@daily","timeZone":"Europe/Pariss"}}`:    "body.schedule.timeZone",
		`{"schedule":{"type":"cron","expression":"61 * * * *","timeZone":"UTC"}}`:          "body.schedule.expression",
		`{"schedule":{"type":"once","expression":"2020-01-01T00:00:00","timeZone":"UTC"}}`: "body.schedule.expression",
		`{"schedule":{"type":"interval","expression":"1h","timeZone":"UTC"}}`:              "body.schedule.expression",
		`{"schedule":{"type":"cron","expression":"@daily","timeZone":"UTC"},"count":1000}`: "body.count",
	} {
		r := preview(body)
		expectProblem(g, r, http.StatusUnprocessableEntity)
		g.Expect(r.body["errors"]).To(ContainElement(HaveKeyWithValue("location", location)), body)
	}
}

// scheduleGoroutines are the stacks of the goroutines computing a schedule.
func scheduleGoroutines() []string {
	buf := make([]byte, 8<<20)
	var out []string
	for _, stack := range strings.Split(string(buf[:goruntime.Stack(buf, true)]), "\n\n") {
		if strings.Contains(stack, "platform.dev/platform/internal/schedule.") {
			out = append(out, stack)
		}
	}
	return out
}

// A schedule preview answers within a second with the right instants, however rarely the
// schedule fires and whatever the zone's daylight saving rules, and leaves nothing computing
// behind; a schedule that never fires is 422 on its expression. These previews once never
// answered and kept a core busy after the client left.
func TestASchedulePreviewAnswersWithinASecondAndLeavesNothingComputing(t *testing.T) {
	g := NewWithT(t)
	server := workServer(t, storeFor(t))
	impatient := &http.Client{Timeout: time.Second}
	preview := func(t *testing.T, body string) (int, map[string]any) {
		t.Helper()
		resp, err := impatient.Post(server.URL+"/api/triggers/preview", "application/json", strings.NewReader(body))
		if err != nil {
			t.Fatalf("%s: %v", body, err)
		}
		defer resp.Body.Close()
		var out map[string]any
		_ = json.NewDecoder(resp.Body).Decode(&out)
		return resp.StatusCode, out
	}
	yearly := func(zone string) []any {
		loc, _ := time.LoadLocation(zone)
		var out []any
		for y := 2027; y < 2057; y++ {
			out = append(out, time.Date(y, 1, 1, 0, 0, 0, 0, loc).Format(time.RFC3339))
		}
		return out
	}
	const after = `"after":"2026-05-01T00:00:00Z"`
	tests := map[string]struct {
		body string
		want []any
	}{
		"29 February in Paris fires in leap years": {body: `{"schedule":{"type":"cron","expression":"0 0 29 2 *","timeZone":"Europe/Paris"},"count":5,` + after + `}`,
			want: []any{"2028-02-29T00:00:00+01:00", "2032-02-29T00:00:00+01:00", "2036-02-29T00:00:00+01:00", "2040-02-29T00:00:00+01:00", "2044-02-29T00:00:00+01:00"}},
		"@yearly in Paris, thirty years":    {body: `{"schedule":{"type":"cron","expression":"@yearly","timeZone":"Europe/Paris"},"count":30,` + after + `}`, want: yearly("Europe/Paris")},
		"@yearly in New York, thirty years": {body: `{"schedule":{"type":"cron","expression":"@yearly","timeZone":"America/New_York"},"count":30,` + after + `}`, want: yearly("America/New_York")},
	}
	for name, tt := range tests {
		t.Run(name, func(t *testing.T) {
			g := NewWithT(t)
			status, body := preview(t, tt.body)
			g.Expect(status).To(Equal(http.StatusOK), "%v", body)
			var locals []any
			for _, i := range body["instants"].([]any) {
				locals = append(locals, i.(map[string]any)["local"])
			}
			g.Expect(locals).To(Equal(tt.want))
		})
	}
	for _, expression := range []string{"0 0 31 2 *", "0 0 30 2 *", "0 12 31 11 *"} {
		status, body := preview(t, `{"schedule":{"type":"cron","expression":"`+expression+`","timeZone":"Europe/Paris"},"count":5}`)
		g.Expect(status).To(Equal(http.StatusUnprocessableEntity), "%s never fires: %v", expression, body)
		g.Expect(body["errors"]).To(ContainElement(HaveKeyWithValue("location", "body.schedule.expression")), expression)
	}
	g.Eventually(scheduleGoroutines, 2*time.Second).Should(BeEmpty(), "no schedule computation outlives its request")
}

// GET /api/triggers answers a page at a time, in name order, as the Management lists do (take,
// skip, search), never more than 100.
func TestTheTriggersListIsPaginated(t *testing.T) {
	g := NewWithT(t)
	server := workServer(t, storeFor(t))
	flow := reportFlowSetup(t, server)
	var names []string
	for i := range 5 {
		name := fmt.Sprintf("page-%s-%d", flow, i)
		names = append(names, name)
		created := call(t, server, http.MethodPost, "/api/triggers", triggerBody(name, flow, weekdayMornings, ""))
		g.Expect(created.status).To(Equal(http.StatusCreated), "%v", created.body)
	}
	page := func(query string) []any {
		r := call(t, server, http.MethodGet, "/api/triggers?search=page-"+flow+query, "")
		g.ExpectWithOffset(1, r.status).To(Equal(http.StatusOK), "%v", r.body)
		var out []any
		for _, item := range r.body["items"].([]any) {
			out = append(out, item.(map[string]any)["metadata"].(map[string]any)["name"])
		}
		return out
	}
	g.Expect(page("&take=2")).To(Equal([]any{names[0], names[1]}), "the first page holds take Triggers")
	g.Expect(page("&take=2&skip=2")).To(Equal([]any{names[2], names[3]}), "skip leads to the next page")
	g.Expect(page("&take=2&skip=4")).To(Equal([]any{names[4]}), "the last page is shorter")
	g.Expect(page("&take=2&skip=6")).To(BeEmpty())
	g.Expect(page("")).To(HaveLen(5), "50 unless take says otherwise")
	g.Expect(page("+"+names[3][len(names[3])-1:]+"&take=100")).To(ContainElement(names[3]), "every word of search must match")
	g.Expect(page("+Disabled")).To(BeEmpty(), "the state is searched: none of them is disabled")
	namespaced := call(t, server, http.MethodGet, "/api/namespaces/default/triggers?take=1&search=page-"+flow, "")
	g.Expect(namespaced.body["items"]).To(HaveLen(1), "the namespaced route pages alike")
	for _, query := range []string{"take=101", "take=0", "skip=-1"} {
		r := call(t, server, http.MethodGet, "/api/triggers?"+query, "")
		expectProblem(g, r, http.StatusUnprocessableEntity)
	}
}
