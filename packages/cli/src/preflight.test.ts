import { describe, expect, it } from 'vitest';
import { topicReplicationFor } from './preflight.js';

describe('topicReplicationFor', () => {
  it('defaults to min(3, brokers), with min.insync.replicas one less and at least 1', () => {
    expect(topicReplicationFor(undefined, 1)).toEqual({ replicationFactor: 1, minInsyncReplicas: 1 });
    expect(topicReplicationFor(undefined, 2)).toEqual({ replicationFactor: 2, minInsyncReplicas: 1 });
    expect(topicReplicationFor(undefined, 3)).toEqual({ replicationFactor: 3, minInsyncReplicas: 2 });
    expect(topicReplicationFor(undefined, 7)).toEqual({ replicationFactor: 3, minInsyncReplicas: 2 });
  });

  it('takes NOTIFY_TOPIC_REPLICATION as given, also beyond the brokers (the caller refuses that)', () => {
    expect(topicReplicationFor(5, 7)).toEqual({ replicationFactor: 5, minInsyncReplicas: 4 });
    expect(topicReplicationFor(3, 1)).toEqual({ replicationFactor: 3, minInsyncReplicas: 2 });
    expect(topicReplicationFor(1, 3)).toEqual({ replicationFactor: 1, minInsyncReplicas: 1 });
  });
});
