package trigger

import (
	"testing"
	"time"

	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	platformv1 "platform.dev/platform/apis/platform/v1"
)

func TestCronNext(t *testing.T) {
	paris, err := time.LoadLocation("Europe/Paris")
	if err != nil {
		t.Fatal(err)
	}
	// A Friday.
	friday := time.Date(2026, 1, 30, 8, 0, 0, 0, paris)
	tests := map[string]struct {
		expr    string
		from    time.Time
		want    time.Time
		wantErr bool
	}{
		"weekdays at seven skip the weekend":     {expr: "0 7 * * 1-5", from: friday, want: time.Date(2026, 2, 2, 7, 0, 0, 0, paris)},
		"weekday names work like numbers":        {expr: "0 7 * * MON-FRI", from: friday, want: time.Date(2026, 2, 2, 7, 0, 0, 0, paris)},
		"steps count from the start":             {expr: "*/15 * * * *", from: friday, want: time.Date(2026, 1, 30, 8, 15, 0, 0, paris)},
		"@daily is midnight":                     {expr: "@daily", from: friday, want: time.Date(2026, 1, 31, 0, 0, 0, 0, paris)},
		"7 is Sunday":                            {expr: "0 0 * * 7", from: friday, want: time.Date(2026, 2, 1, 0, 0, 0, 0, paris)},
		"either day field matches when both set": {expr: "0 0 1 * 6", from: friday, want: time.Date(2026, 1, 31, 0, 0, 0, 0, paris)},
		"a time skipped by DST does not fire":    {expr: "30 2 29 3 *", from: friday, want: time.Date(2027, 3, 29, 2, 30, 0, 0, paris)},
		"a day that never comes never fires":     {expr: "0 0 30 2 *", from: friday},
		"six fields are refused":                 {expr: "0 0 7 * * 1", wantErr: true},
		"an out-of-range minute is refused":      {expr: "60 * * * *", wantErr: true},
		"a backward range is refused":            {expr: "0 9-5 * * *", wantErr: true},
		"an unknown descriptor is refused":       {expr: "@reboot", wantErr: true},
		"a zero step is refused":                 {expr: "*/0 * * * *", wantErr: true},
		"garbage in a field is refused":          {expr: "0 7 * * mon-fry", wantErr: true},
	}
	for name, tt := range tests {
		t.Run(name, func(t *testing.T) {
			g := NewWithT(t)
			s, err := parseCron(tt.expr)
			if tt.wantErr {
				g.Expect(err).To(HaveOccurred())
				return
			}
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(s.next(tt.from).Equal(tt.want)).To(BeTrue(), "next is %s", s.next(tt.from))
		})
	}
}

func TestEvaluate(t *testing.T) {
	now := time.Date(2026, 1, 30, 12, 0, 0, 0, time.UTC)
	schedule := func(typ platformv1.ScheduleType, expr, zone string) *platformv1.TriggerDefinition {
		return &platformv1.TriggerDefinition{Source: platformv1.TriggerSource{Schedule: &platformv1.TriggerSchedule{Type: typ, Expression: expr, TimeZone: zone}}}
	}
	tests := map[string]struct {
		def       *platformv1.TriggerDefinition
		anchor    time.Time
		want      time.Time
		wantField string
	}{
		"an unknown time zone is refused": {
			def: schedule(platformv1.CronSchedule, "@daily", "Mars/Olympus"), wantField: "definition.source.schedule.timeZone",
		},
		"Local is not an IANA name": {
			def: schedule(platformv1.CronSchedule, "@daily", "Local"), wantField: "definition.source.schedule.timeZone",
		},
		"a cron schedule fires in its zone": {
			def: schedule(platformv1.CronSchedule, "0 7 * * *", "Asia/Tokyo"), want: time.Date(2026, 1, 30, 22, 0, 0, 0, time.UTC),
		},
		"an interval counts whole periods from the anchor": {
			def: schedule(platformv1.IntervalSchedule, "01:00:00", "UTC"), anchor: now.Add(-150 * time.Minute), want: now.Add(30 * time.Minute),
		},
		"an interval of days": {
			def: schedule(platformv1.IntervalSchedule, "1.00:00:00", "UTC"), anchor: now, want: now.Add(24 * time.Hour),
		},
		"a zero interval is refused": {
			def: schedule(platformv1.IntervalSchedule, "00:00:00", "UTC"), wantField: "definition.source.schedule.expression",
		},
		"a once schedule ahead fires then": {
			def: schedule(platformv1.OnceSchedule, "2026-01-31T09:00:00", "Europe/Paris"), want: time.Date(2026, 1, 31, 8, 0, 0, 0, time.UTC),
		},
		"a once schedule past fires no more": {
			def: schedule(platformv1.OnceSchedule, "2026-01-01T09:00", "UTC"),
		},
		"a once date that does not exist is refused": {
			def: schedule(platformv1.OnceSchedule, "2026-02-30T09:00:00", "UTC"), wantField: "definition.source.schedule.expression",
		},
	}
	for name, tt := range tests {
		t.Run(name, func(t *testing.T) {
			g := NewWithT(t)
			next, errs := evaluate(tt.def, tt.anchor, now)
			if tt.wantField != "" {
				g.Expect(errs).To(HaveLen(1))
				g.Expect(errs[0].Field).To(Equal(tt.wantField))
				return
			}
			g.Expect(errs).To(BeEmpty())
			g.Expect(next.Equal(tt.want)).To(BeTrue(), "next is %s", next)
		})
	}
}

func TestSetReadyCondition(t *testing.T) {
	g := NewWithT(t)
	disabled := false
	trigger := &platformv1.Trigger{ObjectMeta: metav1.ObjectMeta{Generation: 1}}
	trigger.Definition.Enabled = &disabled
	setReadyCondition(&scope{trigger: trigger})
	g.Expect(trigger.Status.Conditions[0].Reason).To(Equal(platformv1.DisabledReason))
	g.Expect(trigger.Status.NextFireTime).To(BeNil())

	trigger = &platformv1.Trigger{ObjectMeta: metav1.ObjectMeta{Generation: 1}}
	setReadyCondition(&scope{trigger: trigger, targetReason: platformv1.FlowNotFoundReason, targetProblem: `definition.target.flow.name: Flow "x" not found`})
	g.Expect(trigger.Status.Conditions[0].Reason).To(Equal(platformv1.FlowNotFoundReason))
	g.Expect(trigger.Status.Conditions[0].Status).To(Equal(metav1.ConditionFalse))
}

func FuzzParseCron(f *testing.F) {
	for _, seed := range []string{"0 7 * * 1-5", "*/15 0-23/2 1,15 JAN-DEC SUN", "@daily", "0 0 30 2 *"} {
		f.Add(seed)
	}
	from := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	f.Fuzz(func(t *testing.T, expr string) {
		s, err := parseCron(expr)
		if err != nil {
			return
		}
		if next := s.next(from); !next.IsZero() && !next.After(from) {
			t.Fatalf("%q: next %s is not after %s", expr, next, from)
		}
	})
}
