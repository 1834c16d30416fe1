package bench

import (
	"reflect"
	"testing"
	"time"

	"sigs.k8s.io/yaml"
)

func TestPercentile(t *testing.T) {
	ms := func(n ...int) []time.Duration {
		var d []time.Duration
		for _, v := range n {
			d = append(d, time.Duration(v)*time.Millisecond)
		}
		return d
	}
	hundred := make([]int, 100)
	for i := range hundred {
		hundred[i] = i + 1
	}
	for _, c := range []struct {
		sorted []time.Duration
		p      float64
		want   time.Duration
	}{
		{nil, 50, 0},
		{ms(7), 50, 7 * time.Millisecond},
		{ms(7), 99, 7 * time.Millisecond},
		{ms(1, 2), 50, 1 * time.Millisecond},
		{ms(1, 2, 3, 4), 50, 2 * time.Millisecond},
		{ms(1, 2, 3, 4), 99, 4 * time.Millisecond},
		{ms(hundred...), 50, 50 * time.Millisecond},
		{ms(hundred...), 99, 99 * time.Millisecond},
		{ms(hundred...), 100, 100 * time.Millisecond},
	} {
		if got := percentile(c.sorted, c.p); got != c.want {
			t.Errorf("percentile(%v, %v) = %v, want %v", c.sorted, c.p, got, c.want)
		}
	}
}

// TestAgentManifest checks that kubectl applies the same object the dynamic client creates.
func TestAgentManifest(t *testing.T) {
	var fromYAML map[string]any
	if err := yaml.Unmarshal(agentManifest("agent-0001"), &fromYAML); err != nil {
		t.Fatal(err)
	}
	if want := newAgent("agent-0001").Object; !reflect.DeepEqual(fromYAML, want) {
		t.Errorf("manifest decodes to %v, want %v", fromYAML, want)
	}
}
