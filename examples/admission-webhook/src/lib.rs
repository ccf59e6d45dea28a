//! An example of embedding `admission-core`: a Kubernetes validating admission webhook that
//! judges every object it is sent against one saved GCO region policy, with the server gate
//! [`admission_core::validate_manifest`], and answers allowed or denied with the reference's
//! message.
//!
//! - [`review`] is the decision, pure: an `AdmissionReview` (`admission.k8s.io/v1`, kube-core's
//!   types over k8s-openapi's) in, the `AdmissionReview` answer out.
//! - [`server`] serves it over HTTPS (hyper + rustls): `POST /validate`, `GET /healthz`, with
//!   bounded request bodies, a TLS handshake timeout, a request timeout and a connection limit.
//! - [`config`] reads the policy file and the TLS certificate and key, capped, before anything
//!   is served.
//!
//! The binary (`admission-webhook --policy-file … --tls-cert … --tls-key …`) wires them; the
//! README shows how to deploy it.

pub mod config;
pub mod review;
pub mod server;
