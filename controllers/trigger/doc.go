// Package trigger reconciles Triggers with a static check: the time zone is a valid IANA name,
// the schedule parses and the target Flow exists. It reports the next fire time; it schedules
// nothing.
package trigger

// The zone database is embedded so that time zones resolve on machines without tzdata.
import _ "time/tzdata"
