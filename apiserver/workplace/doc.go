// Package workplace is the Workplace plane: the durable conversations (Interactions and their
// Messages) that published Entries open, the public Tasks that work becomes with their
// activities, Results and artifacts, and the Notifications of what needs attention. Its records
// are projections of the Work plane's runs, written in the same transactions as the run
// transitions they describe, so that a conversation is never ahead of or behind its runs.
package workplace
