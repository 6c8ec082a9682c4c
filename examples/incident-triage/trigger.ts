import { defineTrigger } from 'wakegate';
import { IncidentPayload } from './agent';

/**
 * Incident alerts from the tracker: one alert about one service at its own time. Which incident a
 * wake is about (the service) is the agent's wake key, not this key.
 */
export const incidentsTrigger = defineTrigger({
  source: 'incidents',
  description: 'Incident alerts from the error tracker: wakes the incident-triage agent.',
  eventTypes: ['alert.fired'],
  bucket: '1s',
  keyRationale:
    'One logical event per (service, alert type, second the alert fired): a redelivered alert carries the same firedAt and is one event; ' +
    'an alert firing again later has its own time and is a new one. Folding a service’s alerts together is the agent’s wake key’s job.',
  fingerprint: ['service', 'alert'],
  payload: IncidentPayload.passthrough(),
});
