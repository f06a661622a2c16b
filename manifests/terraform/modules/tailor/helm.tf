locals {
  # The repository's chart, found from this module's own directory.
  chart = coalesce(var.chart, "${path.module}/../../../charts/tailor")

  # Every pool gets the node instance profile unless it names its own.
  pools = [for pool in var.pools : merge({ instanceProfile = aws_iam_instance_profile.node.name }, pool)]
}

# The chart's values, as one yamlencode'd document: keys with dots and slashes (the IRSA
# annotation) need no escaping, and manifests/terraform/terraform_test.go checks each key against
# the chart's values.yaml. The chart leaves out the settings that are "".
resource "helm_release" "tailor" {
  count = var.install_chart ? 1 : 0

  name      = "tailor"
  chart     = local.chart
  namespace = var.namespace

  values = concat([yamlencode({
    settings = {
      clusterName       = var.cluster_name
      region            = local.region
      kubernetesVersion = var.kubernetes_version
      clusterEndpoint   = var.cluster_endpoint
      clusterCABundle   = var.cluster_ca_bundle
      interruptionQueue = aws_sqs_queue.interruption.name
    }
    serviceAccount = {
      # Named here, not left to the chart's default, so that the IRSA trust and the Pod Identity
      # association name the account the chart creates.
      name        = var.service_account
      annotations = local.irsa ? { "eks.amazonaws.com/role-arn" = aws_iam_role.controller.arn } : {}
    }
    controller = {
      image = {
        repository = var.image_repository
        tag        = var.image_tag
      }
    }
    pools = local.pools
  })], var.helm_values)

  # The pods need their credentials, their nodes' access entry and (when created here) the spot
  # service-linked role before they start launching.
  depends_on = [
    aws_iam_role_policy.controller,
    aws_eks_pod_identity_association.controller,
    aws_eks_access_entry.node,
    aws_iam_service_linked_role.spot,
  ]
}
