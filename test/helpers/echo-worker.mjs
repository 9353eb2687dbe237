/* global TextEncoder */
// A Piscina worker for batcher tests: renders every job as its revision id, so a test can tell
// which result reached which request. revId 0 answers with an error code instead.
export default function render(batch) {
  return {
    results: batch.jobs.map((job) =>
      job.revId === 0
        ? { head: null, seg: '', error: 'content_not_found' }
        : { head: new TextEncoder().encode(String(job.revId)).buffer, seg: '', error: '' },
    ),
  };
}
