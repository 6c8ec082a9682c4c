import { runIngress } from '../src/processes/ingress';

/**
 * The webhook ingress with the operator's listener, alone (`wakegate ingress` is the same): its
 * addresses from WAKEGATE_INGRESS_HOST/_PORT and WAKEGATE_OPERATOR_HOST/_PORT, every webhook source's
 * secret from its WAKEGATE_WEBHOOK_SECRET_<SOURCE>; on SIGTERM or SIGINT it drains and exits 0.
 */
runIngress().then(
  (code) => process.exit(code),
  (err: unknown) => {
    console.error(err);
    process.exit(1);
  },
);
