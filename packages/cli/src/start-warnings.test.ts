import { describe, expect, it } from 'vitest';
import { topicPlanWarnings } from './start-warnings.js';

describe('topicPlanWarnings', () => {
  it('says nothing when every existing topic is as the configuration creates it', () => {
    expect(topicPlanWarnings({ replicationFactor: 3, lowerExisting: [], otherPartitions: [] })).toEqual([]);
  });

  it('names each topic with another partition count, what it has and what is configured, and says it is used as it is', () => {
    const [w, ...rest] = topicPlanWarnings({
      replicationFactor: 1,
      lowerExisting: [],
      otherPartitions: [
        { topic: 'n.requests', partitions: 2, configured: 3 },
        { topic: 'n.retry.1s', partitions: 4, configured: 1 },
      ],
    });
    expect(rest).toEqual([]);
    expect(w!.fields).toEqual({ topics: ['n.requests (2 partitions, configured 3)', 'n.retry.1s (4 partitions, configured 1)'] });
    expect(w!.message).toContain(
      'n.requests has 2, configured 3; n.retry.1s has 4, configured 1. notify start never changes an existing topic',
    );
  });

  it('lists low replication first, then partition counts', () => {
    const warnings = topicPlanWarnings({
      replicationFactor: 3,
      lowerExisting: [{ topic: 'n.requests', replicationFactor: 1 }],
      otherPartitions: [{ topic: 'n.requests', partitions: 2, configured: 6 }],
    });
    expect(warnings.map((w) => w.message.split(':')[0])).toEqual([
      'existing Kafka topics have fewer replicas than 3',
      'existing Kafka topics have another partition count than NOTIFY_TOPIC_PARTITIONS (NOTIFY_RETRY_TOPIC_PARTITIONS for delay topics) asks for',
    ]);
  });
});
