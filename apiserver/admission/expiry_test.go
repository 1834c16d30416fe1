package admission

import (
	"context"
	"fmt"
	"testing"

	. "github.com/onsi/gomega"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	apiadmission "k8s.io/apiserver/pkg/admission"
	"sigs.k8s.io/yaml"
)

// suspendingFlow is a Flow whose step "ask" asks the suspension given in YAML.
func suspendingFlow(t *testing.T, suspend string) *unstructured.Unstructured {
	t.Helper()
	u := &unstructured.Unstructured{}
	doc := "apiVersion: platform.dev/v1\nkind: Flow\nmetadata: {name: answer, namespace: acme}\ndefinition:\n" +
		"  flowKind: Orchestration\n  steps:\n  - {name: in, type: Input}\n  - name: ask\n    type: Output\n    suspend: " + suspend + "\n"
	if err := yaml.Unmarshal([]byte(doc), &u.Object); err != nil {
		t.Fatal(err)
	}
	return u
}

func TestAQuestionsExpiryMustFitTheQuestion(t *testing.T) {
	choice := `{kind: Choice, prompt: Which, choices: [{value: fast}, {value: thorough}], expiry: %s}`
	tests := map[string]struct {
		suspend string
		field   string // the refused field, "" when accepted
	}{
		"a Choice proceeds with one of its values": {suspend: fmt.Sprintf(choice, `{expiresAfter: 30s, onExpiry: Proceed, default: fast}`)},
		"a Choice's default must be one of its values": {suspend: fmt.Sprintf(choice, `{expiresAfter: 30s, onExpiry: Proceed, default: slow}`),
			field: "definition.steps[1].suspend.expiry.default"},
		"Proceed declares its default": {suspend: fmt.Sprintf(choice, `{expiresAfter: 30s, onExpiry: Proceed}`),
			field: "definition.steps[1].suspend.expiry.default"},
		"only Proceed has a default": {suspend: fmt.Sprintf(choice, `{expiresAfter: 30s, onExpiry: Fail, default: fast}`),
			field: "definition.steps[1].suspend.expiry.default"},
		"a Choice cannot be rejected": {suspend: fmt.Sprintf(choice, `{expiresAfter: 30s, onExpiry: Reject}`),
			field: "definition.steps[1].suspend.expiry.onExpiry"},
		"an Approval can be rejected": {suspend: `{kind: Approval, prompt: Ship, expiry: {expiresAfter: 1h, onExpiry: Reject}}`},
		"a Confirmation proceeds with a boolean": {suspend: `{kind: Confirmation, prompt: Sure, expiry: {expiresAfter: 1h, onExpiry: Proceed, default: "yes"}}`,
			field: "definition.steps[1].suspend.expiry.default"},
		"a Confirmation proceeds with true": {suspend: `{kind: Confirmation, prompt: Sure, expiry: {expiresAfter: 1h, onExpiry: Proceed, default: true}}`},
		"a Text question proceeds with text": {suspend: `{kind: Text, prompt: Why, expiry: {expiresAfter: 1h, onExpiry: Proceed, default: ""}}`,
			field: "definition.steps[1].suspend.expiry.default"},
		"a File question cannot proceed": {suspend: `{kind: File, prompt: Send it, expiry: {expiresAfter: 1h, onExpiry: Proceed, default: x}}`,
			field: "definition.steps[1].suspend.expiry.default"},
		"any question escalates": {suspend: `{kind: Text, prompt: Why, expiry: {expiresAfter: 10m, onExpiry: Escalate, remindBefore: 2m}}`},
		"a question waits at most 30 days": {suspend: `{kind: Text, prompt: Why, expiry: {expiresAfter: 721h}}`,
			field: "definition.steps[1].suspend.expiry.expiresAfter"},
		"a question waits at least a second": {suspend: `{kind: Text, prompt: Why, expiry: {expiresAfter: 10ms}}`,
			field: "definition.steps[1].suspend.expiry.expiresAfter"},
		"the reminder comes before the expiry": {suspend: `{kind: Text, prompt: Why, expiry: {expiresAfter: 10m, remindBefore: 10m}}`,
			field: "definition.steps[1].suspend.expiry.remindBefore"},
	}
	for name, tt := range tests {
		t.Run(name, func(t *testing.T) {
			g := NewWithT(t)
			err := New().Validate(context.Background(), attributes("flows", apiadmission.Create, suspendingFlow(t, tt.suspend), nil, administrator), nil)
			if tt.field == "" {
				g.Expect(err).NotTo(HaveOccurred())
				return
			}
			g.Expect(apierrors.IsInvalid(err)).To(BeTrue(), "%v", err)
			g.Expect(err.(*apierrors.StatusError).ErrStatus.Details.Causes).To(ContainElement(HaveField("Field", tt.field)))
		})
	}
}

func TestAToolsApprovalExpiryNeedsAnApproval(t *testing.T) {
	tool := func(def string) *unstructured.Unstructured {
		u := &unstructured.Unstructured{}
		if err := yaml.Unmarshal([]byte("apiVersion: platform.dev/v1\nkind: Tool\nmetadata: {name: t, namespace: acme}\ndefinition: "+def), &u.Object); err != nil {
			t.Fatal(err)
		}
		return u
	}
	tests := map[string]struct {
		definition string
		field      string
	}{
		"an approval expiry without requiresApproval": {definition: `{provider: {name: p}, toolName: x, approvalExpiry: {expiresAfter: 1m}}`,
			field: "definition.approvalExpiry"},
		"an approval rejected on expiry": {definition: `{provider: {name: p}, toolName: x, requiresApproval: true, approvalExpiry: {expiresAfter: 1m, onExpiry: Reject}}`},
		"an approval proceeds with a boolean": {definition: `{provider: {name: p}, toolName: x, requiresApproval: true, approvalExpiry: {expiresAfter: 1m, onExpiry: Proceed, default: approve}}`,
			field: "definition.approvalExpiry.default"},
	}
	for name, tt := range tests {
		t.Run(name, func(t *testing.T) {
			g := NewWithT(t)
			err := New().Validate(context.Background(), attributes("tools", apiadmission.Update, tool(tt.definition), nil, administrator), nil)
			if tt.field == "" {
				g.Expect(err).NotTo(HaveOccurred())
				return
			}
			g.Expect(apierrors.IsInvalid(err)).To(BeTrue(), "%v", err)
			g.Expect(err.(*apierrors.StatusError).ErrStatus.Details.Causes).To(ContainElement(HaveField("Field", tt.field)))
		})
	}
}
