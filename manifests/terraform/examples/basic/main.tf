# Tailor on an existing EKS cluster: IRSA, the cluster's own subnets and security group tagged
# for discovery, and the chart from this repository. Replace the placeholder defaults in
# variables.tf (or pass -var) before `terraform apply`.

provider "aws" {
  region = var.region
}

data "aws_eks_cluster" "this" {
  name = var.cluster_name
}

data "aws_iam_openid_connect_provider" "this" {
  url = data.aws_eks_cluster.this.identity[0].oidc[0].issuer
}

# Helm talks to the cluster with the caller's AWS credentials, as kubectl does after
# `aws eks update-kubeconfig`; the caller needs cluster-admin there to install the chart.
# helm provider 3.x: kubernetes and exec are object attributes (=), no longer blocks.
provider "helm" {
  kubernetes = {
    host                   = data.aws_eks_cluster.this.endpoint
    cluster_ca_certificate = base64decode(data.aws_eks_cluster.this.certificate_authority[0].data)

    exec = {
      api_version = "client.authentication.k8s.io/v1beta1"
      command     = "aws"
      args        = ["eks", "get-token", "--cluster-name", var.cluster_name, "--region", var.region]
    }
  }
}

module "tailor" {
  source = "../../modules/tailor"

  cluster_name       = var.cluster_name
  kubernetes_version = data.aws_eks_cluster.this.version

  identity          = "irsa"
  oidc_provider_arn = data.aws_iam_openid_connect_provider.this.arn

  discovery_subnet_ids         = var.subnet_ids
  discovery_security_group_ids = [data.aws_eks_cluster.this.vpc_config[0].cluster_security_group_id]

  image_repository = var.image_repository
  image_tag        = var.image_tag

  # The spot pool below needs the account's spot service-linked role.
  create_spot_service_linked_role = var.create_spot_service_linked_role

  # A spot pool beside the default on-demand one; both get the module's instance profile.
  pools = [
    {
      name          = "general"
      weight        = 10
      capacityTypes = ["on-demand"]
      requirements = [
        { key = "tailor.dev/instance-category", operator = "In", values = ["c", "m", "r"] },
        { key = "tailor.dev/instance-generation", operator = "Gt", values = ["4"] },
        { key = "kubernetes.io/arch", operator = "In", values = ["amd64", "arm64"] },
      ]
      ami    = "al2023"
      limits = { cpu = "1000", memory = "4000Gi" }
    },
    {
      name          = "spot"
      weight        = 20
      capacityTypes = ["spot"]
      requirements = [
        { key = "tailor.dev/instance-category", operator = "In", values = ["c", "m", "r"] },
        { key = "tailor.dev/instance-generation", operator = "Gt", values = ["4"] },
        { key = "kubernetes.io/arch", operator = "In", values = ["amd64", "arm64"] },
      ]
      labels = { workload-class = "interruptible" }
      taints = [{ key = "tailor.dev/spot", value = "true", effect = "NoSchedule" }]
    },
  ]

  tags = {
    "app.kubernetes.io/part-of" = "tailor"
  }
}
