// Package entry reconciles Entry drafts and PublishedEntries: a draft is Ready when its binding
// (and continuation) target exists, a published Entry when its pinned Flow version can run.
// Publishing is not a reconciler's job.
package entry
