import { describe, expect, it } from 'vitest';
import { InvalidTransitionError } from '../errors.js';
import { NOTIFICATION_STATES, TRANSITIONS, assertTransition, canTransition, isTerminal } from './state.js';

describe('state machine', () => {
  it('allows the article transitions and manual retry/cancel', () => {
    expect(canTransition('queued', 'sent')).toBe(true);
    expect(canTransition('queued', 'dead')).toBe(true);
    expect(canTransition('queued', 'queued')).toBe(true);
    expect(canTransition('queued', 'cancelled')).toBe(true);
    expect(canTransition('dead', 'queued')).toBe(true);
  });
  it('never leaves sent or cancelled', () => {
    for (const to of NOTIFICATION_STATES) {
      expect(canTransition('sent', to)).toBe(false);
      expect(canTransition('cancelled', to)).toBe(false);
    }
    expect(() => assertTransition('sent', 'queued')).toThrow(InvalidTransitionError);
  });
  it('lists a transition table for every state and names terminal states', () => {
    expect(Object.keys(TRANSITIONS).sort()).toEqual([...NOTIFICATION_STATES].sort());
    expect(NOTIFICATION_STATES.filter(isTerminal)).toEqual(['sent', 'dead', 'cancelled']);
  });
});
