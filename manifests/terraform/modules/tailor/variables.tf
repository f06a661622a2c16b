variable "cluster_name" {
  description = "Name of the EKS cluster Tailor launches nodes for. It scopes the discovery tags, the IAM names and the chart's settings.clusterName."
  type        = string

  validation {
    condition     = can(regex("^[0-9A-Za-z][A-Za-z0-9_-]{0,99}$", var.cluster_name))
    error_message = "cluster_name must be an EKS cluster name: 1 to 100 letters, digits, hyphens and underscores, starting with a letter or digit."
  }
}

variable "identity" {
  description = "How the scheduler pods get the controller role: \"irsa\" (IAM roles for service accounts; needs oidc_provider_arn) or \"pod_identity\" (EKS Pod Identity; needs the eks-pod-identity-agent add-on)."
  type        = string
  default     = "irsa"

  validation {
    condition     = contains(["irsa", "pod_identity"], var.identity)
    error_message = "identity must be \"irsa\" or \"pod_identity\"."
  }
}

variable "oidc_provider_arn" {
  description = "ARN of the cluster's IAM OIDC provider (arn:<partition>:iam::<account>:oidc-provider/oidc.eks.<region>.amazonaws.com/id/<id>). Required with identity \"irsa\"."
  type        = string
  default     = ""

  validation {
    condition     = var.identity != "irsa" || can(regex("^arn:[^:]+:iam::[0-9]{12}:oidc-provider/.+", var.oidc_provider_arn))
    error_message = "identity \"irsa\" needs oidc_provider_arn, the ARN of the cluster's IAM OIDC provider."
  }
}

variable "oidc_provider_url" {
  description = "Issuer URL of the cluster's OIDC provider (https://oidc.eks.<region>.amazonaws.com/id/<id>). Default: taken from oidc_provider_arn."
  type        = string
  default     = ""
}

variable "namespace" {
  description = "Namespace of the Helm release and of the service account the controller role trusts."
  type        = string
  default     = "kube-system"
}

variable "service_account" {
  description = "Name of the service account the chart creates and the controller role trusts."
  type        = string
  default     = "tailor"
}

variable "controller_role_name" {
  description = "Name of the controller's IAM role. Default: <cluster_name>-tailor-controller."
  type        = string
  default     = ""
}

variable "node_role_name" {
  description = "Name of the nodes' IAM role and instance profile. Default: <cluster_name>-tailor-node."
  type        = string
  default     = ""
}

variable "interruption_queue_name" {
  description = "Name of the SQS interruption queue. Default: <cluster_name>-tailor-interruption."
  type        = string
  default     = ""
}

variable "create_spot_service_linked_role" {
  description = "Create the account's EC2 Spot service-linked role (AWSServiceRoleForEC2Spot, spot.amazonaws.com), without which an account's first spot launch fails. Default false: the role is one per account, and creating it where it already exists (any earlier spot use, or another cluster's module with this input true) fails with InvalidInput \"Service role name AWSServiceRoleForEC2Spot has been taken in this account\", i.e. it already exists. Instead of this input you may run `aws iam create-service-linked-role --aws-service-name spot.amazonaws.com` once per account."
  type        = bool
  default     = false
}

variable "discovery_subnet_ids" {
  description = "Subnets Tailor's pools may launch into: each gets the tag <discovery_tag_key>=<cluster_name>."
  type        = list(string)
  default     = []

  validation {
    condition     = alltrue([for id in var.discovery_subnet_ids : startswith(id, "subnet-")])
    error_message = "discovery_subnet_ids must be subnet IDs (subnet-...)."
  }
}

variable "discovery_security_group_ids" {
  description = "Security groups of the nodes Tailor launches (usually the cluster security group): each gets the tag <discovery_tag_key>=<cluster_name>."
  type        = list(string)
  default     = []

  validation {
    condition     = alltrue([for id in var.discovery_security_group_ids : startswith(id, "sg-")])
    error_message = "discovery_security_group_ids must be security group IDs (sg-...)."
  }
}

variable "discovery_tag_key" {
  description = "Key of the discovery tag. Pools without subnetSelector / securityGroupSelector look for tailor.dev/discovery=<cluster name>; with another key, every pool must select it itself (e.g. subnetSelector: {tags: {<key>: <cluster name>}})."
  type        = string
  default     = "tailor.dev/discovery"

  validation {
    condition     = length(var.discovery_tag_key) > 0 && length(var.discovery_tag_key) <= 128 && !startswith(var.discovery_tag_key, "aws:")
    error_message = "discovery_tag_key must be an EC2 tag key: 1 to 128 characters, not starting with aws:."
  }
}

variable "install_chart" {
  description = "Install the chart with a helm_release. False leaves the install to you (helm, Argo CD, …): the outputs give what it needs."
  type        = bool
  default     = true
}

variable "chart" {
  description = "Path of the Tailor chart. Default: manifests/charts/tailor of the repository this module is in."
  type        = string
  default     = ""
}

variable "image_repository" {
  description = "Repository of the scheduler image (controller.image.repository), e.g. <account>.dkr.ecr.<region>.amazonaws.com/tailor-scheduler: `make image` builds it and you push it."
  type        = string

  validation {
    condition     = length(var.image_repository) > 0
    error_message = "image_repository must name the repository the scheduler image was pushed to."
  }
}

variable "image_tag" {
  description = "Tag of the scheduler image (controller.image.tag). Default: the chart's appVersion."
  type        = string
  default     = ""
}

variable "kubernetes_version" {
  description = "Kubernetes version picking the EKS-optimized AMIs behind pool aliases (settings.kubernetesVersion), e.g. \"1.34\". Default: the chart's."
  type        = string
  default     = ""

  validation {
    condition     = var.kubernetes_version == "" || can(regex("^1\\.[0-9]+$", var.kubernetes_version))
    error_message = "kubernetes_version must be a minor version such as \"1.34\", or \"\"."
  }
}

variable "cluster_endpoint" {
  description = "API server URL the nodes join (settings.clusterEndpoint). Default: what eks:DescribeCluster reports."
  type        = string
  default     = ""
}

variable "cluster_ca_bundle" {
  description = "Cluster certificate authority, base64-encoded PEM (settings.clusterCABundle). Default: what eks:DescribeCluster reports."
  type        = string
  default     = ""
}

variable "pools" {
  description = "Tailor's pools (the chart's pools, see the README's \"Plugin args\"). A pool without instanceProfile gets the node instance profile this module creates."
  type        = any
  # The chart's default pool.
  default = [{
    name          = "general"
    weight        = 10
    capacityTypes = ["on-demand"]
    requirements = [
      { key = "tailor.dev/instance-category", operator = "In", values = ["c", "m", "r"] },
      { key = "tailor.dev/instance-generation", operator = "Gt", values = ["4"] },
      { key = "kubernetes.io/arch", operator = "In", values = ["amd64", "arm64"] },
    ]
    ami = "al2023"
  }]

  validation {
    condition     = length(var.pools) > 0 && alltrue([for pool in var.pools : can(pool.name)])
    error_message = "pools must hold at least one pool, each with a name."
  }
}

variable "helm_values" {
  description = "More values documents for the chart (YAML), applied after the module's: e.g. replicas, resources, tolerations."
  type        = list(string)
  default     = []
}

variable "tags" {
  description = "Tags of the AWS resources the module creates (not of the instances Tailor launches)."
  type        = map(string)
  default     = {}
}
