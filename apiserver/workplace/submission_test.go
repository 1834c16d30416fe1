package workplace

import (
	"encoding/json"
	"strings"
	"testing"

	. "github.com/onsi/gomega"

	platformv1 "platform.dev/platform/apis/platform/v1"
)

var reportFields = &platformv1.EntryPresentation{Fields: []platformv1.EntryField{
	{Name: "request", Type: platformv1.MultilineTextField, Role: platformv1.PrimaryInputRole, Required: true},
	{Name: "detailLevel", Type: platformv1.ChoiceField, Default: "standard", Choices: []platformv1.FlowChoice{{Value: "brief"}, {Value: "standard"}}},
	{Name: "pages", Type: platformv1.NumberField},
	{Name: "urgent", Type: platformv1.BooleanField},
	{Name: "title", Type: platformv1.TextField},
}}

func TestCheckSubmission(t *testing.T) {
	tests := map[string]struct {
		input     string
		wantPaths []string
		want      map[string]any
	}{
		"a complete submission keeps its values":      {input: `{"request":"Q3 sales","detailLevel":"brief","pages":3,"urgent":true}`, want: map[string]any{"request": "Q3 sales", "detailLevel": "brief", "pages": 3.0, "urgent": true}},
		"an omitted field takes its default":          {input: `{"request":"Q3"}`, want: map[string]any{"request": "Q3", "detailLevel": "standard"}},
		"an unknown field is refused with its path":   {input: `{"request":"Q3","colour":"red"}`, wantPaths: []string{"input[colour]"}},
		"a required field must be given":              {input: `{}`, wantPaths: []string{"input[request]"}},
		"a blank required text is not given":          {input: `{"request":"  "}`, wantPaths: []string{"input[request]"}},
		"a choice is one of the field's choices":      {input: `{"request":"Q3","detailLevel":"huge"}`, wantPaths: []string{"input[detailLevel]"}},
		"a number is a number":                        {input: `{"request":"Q3","pages":"many"}`, wantPaths: []string{"input[pages]"}},
		"a boolean is a boolean":                      {input: `{"request":"Q3","urgent":"yes"}`, wantPaths: []string{"input[urgent]"}},
		"a one-line text has one line":                {input: `{"request":"Q3","title":"a\nb"}`, wantPaths: []string{"input[title]"}},
		"the message is bounded":                      {input: `{"request":"` + strings.Repeat("x", MaxMessageLength+1) + `"}`, wantPaths: []string{"input[request]"}},
		"an object where text is expected is refused": {input: `{"request":{"nested":true}}`, wantPaths: []string{"input[request]"}},
	}
	for name, tt := range tests {
		t.Run(name, func(t *testing.T) {
			g := NewWithT(t)
			var input map[string]json.RawMessage
			g.Expect(json.Unmarshal([]byte(tt.input), &input)).To(Succeed())
			got, errs := CheckSubmission(reportFields, input)
			var paths []string
			for _, e := range errs {
				paths = append(paths, e.Field)
			}
			g.Expect(paths).To(ConsistOf(tt.wantPaths))
			if tt.want != nil {
				g.Expect(got.Values).To(Equal(tt.want))
				g.Expect(got.Text).To(Equal(tt.want["request"]))
			}
		})
	}
}
