package reconcileutil

import (
	"context"
	"errors"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/client-go/tools/events"
	ctrl "sigs.k8s.io/controller-runtime"

	platformv1 "platform.dev/platform/apis/platform/v1"
)

func TestLowestNonZeroResult(t *testing.T) {
	tests := map[string]struct {
		a, b, want ctrl.Result
	}{
		"zero and zero is zero":         {},
		"a requeue wins over none":      {a: ctrl.Result{RequeueAfter: time.Minute}, want: ctrl.Result{RequeueAfter: time.Minute}},
		"none loses to a requeue":       {b: ctrl.Result{RequeueAfter: time.Minute}, want: ctrl.Result{RequeueAfter: time.Minute}},
		"the shortest requeue wins":     {a: ctrl.Result{RequeueAfter: time.Minute}, b: ctrl.Result{RequeueAfter: time.Second}, want: ctrl.Result{RequeueAfter: time.Second}},
		"the shortest requeue wins too": {a: ctrl.Result{RequeueAfter: time.Second}, b: ctrl.Result{RequeueAfter: time.Minute}, want: ctrl.Result{RequeueAfter: time.Second}},
	}
	for name, tt := range tests {
		t.Run(name, func(t *testing.T) {
			NewWithT(t).Expect(LowestNonZeroResult(tt.a, tt.b)).To(Equal(tt.want))
		})
	}
}

func TestRunPhases(t *testing.T) {
	g := NewWithT(t)
	var ran []string
	phase := func(name string, res ctrl.Result, err error) Phase[*[]string] {
		return func(_ context.Context, s *[]string) (ctrl.Result, error) {
			*s = append(*s, name)
			return res, err
		}
	}
	res, err := RunPhases(context.Background(), &ran,
		phase("a", ctrl.Result{RequeueAfter: time.Minute}, nil),
		phase("b", ctrl.Result{RequeueAfter: time.Second}, nil))
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(res).To(Equal(ctrl.Result{RequeueAfter: time.Second}), "the shortest requeue wins")

	ran = nil
	_, err = RunPhases(context.Background(), &ran,
		phase("a", ctrl.Result{}, errors.New("first")),
		phase("b", ctrl.Result{}, errors.New("second")),
		phase("c", ctrl.Result{}, nil))
	g.Expect(ran).To(Equal([]string{"a", "b", "c"}), "every phase runs")
	g.Expect(err).To(MatchError(ContainSubstring("first")))
	g.Expect(err).To(MatchError(ContainSubstring("second")))
}

func TestFinish(t *testing.T) {
	conflict := apierrors.NewConflict(schema.GroupResource{Group: "platform.dev", Resource: "agents"}, "triage", errors.New("changed"))
	tests := map[string]struct {
		res                ctrl.Result
		reconcileErr, werr error
		wantRes            ctrl.Result
		wantErr            string
	}{
		"no write error keeps the result": {
			res: ctrl.Result{RequeueAfter: time.Minute}, wantRes: ctrl.Result{RequeueAfter: time.Minute},
		},
		"a conflict requeues silently": {
			werr: conflict, wantRes: ctrl.Result{RequeueAfter: ConflictRequeue},
		},
		"a conflict after a failed reconcile returns the reconcile error": {
			reconcileErr: errors.New("list failed"), werr: conflict, wantErr: "list failed",
		},
		"an object deleted meanwhile is no error": {
			werr: apierrors.NewNotFound(schema.GroupResource{Group: "platform.dev", Resource: "agents"}, "triage"),
		},
		"another write error is returned": {
			werr: errors.New("forbidden"), wantErr: "forbidden",
		},
	}
	for name, tt := range tests {
		t.Run(name, func(t *testing.T) {
			g := NewWithT(t)
			res, err := Finish(tt.res, tt.reconcileErr, tt.werr)
			g.Expect(res).To(Equal(tt.wantRes))
			if tt.wantErr == "" {
				g.Expect(err).NotTo(HaveOccurred())
			} else {
				g.Expect(err).To(MatchError(ContainSubstring(tt.wantErr)))
			}
		})
	}
}

func TestRecordReadyTransition(t *testing.T) {
	cond := func(status metav1.ConditionStatus, reason string) *metav1.Condition {
		return &metav1.Condition{Type: platformv1.ReadyCondition, Status: status, Reason: reason, Message: "why"}
	}
	tests := map[string]struct {
		before, after *metav1.Condition
		want          string
	}{
		"a first condition is an event":      {after: cond(metav1.ConditionFalse, "AgentNotFound"), want: "Warning AgentNotFound why"},
		"a status change is an event":        {before: cond(metav1.ConditionFalse, "AgentNotFound"), after: cond(metav1.ConditionTrue, "Resolved"), want: "Normal Resolved why"},
		"a reason change is an event":        {before: cond(metav1.ConditionFalse, "AgentNotFound"), after: cond(metav1.ConditionFalse, "InvalidDefinition"), want: "Warning InvalidDefinition why"},
		"an unchanged condition is no event": {before: cond(metav1.ConditionTrue, "Resolved"), after: cond(metav1.ConditionTrue, "Resolved")},
		"no condition is no event":           {},
	}
	for name, tt := range tests {
		t.Run(name, func(t *testing.T) {
			g := NewWithT(t)
			recorder := events.NewFakeRecorder(1)
			RecordReadyTransition(recorder, &platformv1.Agent{}, tt.before, tt.after)
			if tt.want == "" {
				g.Expect(recorder.Events).To(BeEmpty())
				return
			}
			g.Expect(recorder.Events).To(Receive(Equal(tt.want)))
		})
	}
}

func TestFindingsMessage(t *testing.T) {
	path := field.NewPath("definition", "steps")
	tests := map[string]struct {
		findings field.ErrorList
		want     string
	}{
		"each finding is its field path and its detail": {
			findings: field.ErrorList{field.Invalid(path.Index(2).Child("expression"), "x +", "does not compile"), field.Required(path, "needs steps")},
			want:     "definition.steps[2].expression: does not compile; definition.steps: needs steps",
		},
		"a finding without detail shows its error body": {
			findings: field.ErrorList{field.NotFound(path.Index(0), "x")},
			want:     `definition.steps[0]: Not found: "x"`,
		},
		"the message is one line": {
			findings: field.ErrorList{field.Invalid(path, "", "line one\n  | line two")},
			want:     "definition.steps: line one | line two",
		},
		"the message lists at most eight findings": {
			findings: func() field.ErrorList {
				var errs field.ErrorList
				for i := range 10 {
					errs = append(errs, field.Required(path.Index(i), "x"))
				}
				return errs
			}(),
			want: "definition.steps[0]: x; definition.steps[1]: x; definition.steps[2]: x; definition.steps[3]: x; " +
				"definition.steps[4]: x; definition.steps[5]: x; definition.steps[6]: x; definition.steps[7]: x; and 2 more",
		},
	}
	for name, tt := range tests {
		t.Run(name, func(t *testing.T) {
			NewWithT(t).Expect(FindingsMessage(tt.findings)).To(Equal(tt.want))
		})
	}
}

func TestNotReady(t *testing.T) {
	tests := map[string]struct {
		conditions []metav1.Condition
		want       string
	}{
		"no condition has not reported": {want: "has not reported Ready yet"},
		"Ready is nothing to say": {
			conditions: []metav1.Condition{{Type: platformv1.ReadyCondition, Status: metav1.ConditionTrue, Reason: "Resolved"}},
		},
		"not Ready says the reason and the message": {
			conditions: []metav1.Condition{{Type: platformv1.ReadyCondition, Status: metav1.ConditionFalse, Reason: "SecretNotFound", Message: "gone"}},
			want:       "is not Ready (SecretNotFound): gone",
		},
	}
	for name, tt := range tests {
		t.Run(name, func(t *testing.T) {
			NewWithT(t).Expect(NotReady(tt.conditions)).To(Equal(tt.want))
		})
	}
}

func TestRequests(t *testing.T) {
	g := NewWithT(t)
	list := &platformv1.AgentList{Items: []platformv1.Agent{
		{ObjectMeta: metav1.ObjectMeta{Namespace: "ws", Name: "a"}},
		{ObjectMeta: metav1.ObjectMeta{Namespace: "ws", Name: "b"}},
	}}
	requests := Requests(list)
	g.Expect(requests).To(HaveLen(2))
	g.Expect(requests[0].Namespace + "/" + requests[0].Name).To(Equal("ws/a"))
	g.Expect(requests[1].Namespace + "/" + requests[1].Name).To(Equal("ws/b"))
	g.Expect(Requests(&platformv1.AgentList{})).To(BeEmpty())
}

func TestProvisioning(t *testing.T) {
	ready := func(status metav1.ConditionStatus, reason string) *metav1.Condition {
		return &metav1.Condition{Type: platformv1.ReadyCondition, Status: status, Reason: reason}
	}
	tests := map[string]struct {
		ready *metav1.Condition
		want  platformv1.ProvisioningState
	}{
		"no Ready condition yet is Pending":             {want: platformv1.ProvisioningPending},
		"Ready is Provisioned":                          {ready: ready(metav1.ConditionTrue, platformv1.ResolvedReason), want: platformv1.ProvisioningProvisioned},
		"an invalid definition is Failed":               {ready: ready(metav1.ConditionFalse, platformv1.InvalidDefinitionReason), want: platformv1.ProvisioningFailed},
		"a failed installation is Failed":               {ready: ready(metav1.ConditionFalse, platformv1.InstallFailedReason), want: platformv1.ProvisioningFailed},
		"waiting on a reference is Pending":             {ready: ready(metav1.ConditionFalse, platformv1.AgentNotFoundReason), want: platformv1.ProvisioningPending},
		"an unknown Ready status is Pending, not Ready": {ready: ready(metav1.ConditionUnknown, platformv1.ReconcilingReason), want: platformv1.ProvisioningPending},
	}
	for name, tt := range tests {
		t.Run(name, func(t *testing.T) {
			NewWithT(t).Expect(Provisioning(tt.ready)).To(Equal(tt.want))
		})
	}
}

func TestObserved(t *testing.T) {
	g := NewWithT(t)
	status := &platformv1.ResourceStatus{Conditions: []metav1.Condition{{Type: platformv1.ReadyCondition, Status: metav1.ConditionTrue, Reason: platformv1.ResolvedReason}}}
	Observed(status, 3)
	g.Expect(status.ObservedGeneration).To(Equal(int64(3)))
	g.Expect(status.Provisioning).To(Equal(platformv1.ProvisioningProvisioned))
}
